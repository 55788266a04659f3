import { oneLine, renderEmail, type EmailContent, type RenderedEmail } from './layout.js';

/** What a recipient is asked to do, by role: SIGNER signs, APPROVER approves, VIEWER reads. */
export type SigningAction = 'sign' | 'approve' | 'view';

/** The envelope as its emails describe it. */
export type EnvelopeMail = {
  title: string | null;
  /** The account that sent it (its name); null for documents created before senders were recorded. */
  senderName: string | null;
  /** The sender's own subject and message (meta), used as given. */
  subject?: string;
  message?: string;
  /** The end of the signing window. */
  expiresAt: Date;
  test: boolean;
  /** The sending account's accent (#rrggbb, checked for contrast with white when set) for the button. */
  accent?: string;
  /** The sending account's logo as recorded at create, an absolute URL under PUBLIC_URL; none: no logo. */
  logoUrl?: string | null;
};

export type MailPerson = { name: string; email: string };

const ACTIONS = {
  sign: { eyebrow: 'Signature requested', button: 'Review and sign', ask: 'review and sign', by: 'Sign by' },
  approve: { eyebrow: 'Approval requested', button: 'Review and approve', ask: 'review and approve', by: 'Approve by' },
  view: { eyebrow: 'Document shared with you', button: 'View document', ask: 'read', by: 'Link works until' },
} as const;

const DAY_MONTH_YEAR = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
const HOUR_MINUTE = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone: 'UTC' });

/** "14 March 2026, 14:30 UTC": we do not know the reader's time zone, so we say which one we mean. */
export const formatDeadline = (at: Date) => `${DAY_MONTH_YEAR.format(at)}, ${HOUR_MINUTE.format(at)} UTC`;

const quoted = (title: string) => `“${title}”`;
const named = (env: EnvelopeMail) => (env.title ? quoted(env.title) : 'a document');
/** Titles in subjects are cut short: the subject must stay readable in an inbox list. */
const subjectTitle = (env: EnvelopeMail) => (env.title ? quoted(oneLine(env.title, 80)) : 'a document');
const heading = (env: EnvelopeMail) => env.title ?? 'Untitled document';
const senderOf = (env: EnvelopeMail) => env.senderName?.trim() || null;

function footer(env: EnvelopeMail): string[] {
  const sender = senderOf(env);
  return [
    sender ? `Sent by Signet on behalf of ${sender}.` : 'Sent by Signet, an electronic signature service.',
    `You received this email because your address was given as a recipient of ${named(env)}.`,
  ];
}

const PERSONAL_LINK = 'This link is personal: whoever has it can act on this document as you. Please do not forward this email.';
const UNEXPECTED = 'Not expecting this? If you do not know the sender, ignore this email: nothing happens unless you open the link and act.';

function base(env: EnvelopeMail, who: MailPerson): Pick<EmailContent, 'greeting' | 'heading' | 'footer' | 'test' | 'accent' | 'logo'> {
  const logo = env.logoUrl ? { url: env.logoUrl, alt: senderOf(env) ?? 'Sender logo' } : undefined;
  return { greeting: `Hello ${who.name},`, heading: heading(env), footer: footer(env), test: env.test, accent: env.accent, logo };
}

/** The first message a recipient gets: who asks what, the sender's message, one button, the deadline. */
export function invitationEmail(env: EnvelopeMail, who: MailPerson, link: string, action: SigningAction): RenderedEmail {
  const a = ACTIONS[action];
  const sender = senderOf(env);
  const asks =
    action === 'view'
      ? `${sender ?? 'Someone'} shared ${named(env)} with you to read. Nothing else is asked of you.`
      : `${sender ? `${sender} asks you` : 'You are asked'} to ${a.ask} ${named(env)}.`;
  return renderEmail({
    ...base(env, who),
    // Invitations' subjects start with "Please", as they always have: recipients' mail filters may rely on it.
    subject: env.subject ?? `Please ${action} ${subjectTitle(env)}`,
    preview: `${asks} ${a.by}: ${formatDeadline(env.expiresAt)}.`,
    eyebrow: a.eyebrow,
    paragraphs: [asks],
    quote: env.message ? { label: `Message from ${sender ?? 'the sender'}`, text: env.message } : undefined,
    button: { label: a.button, url: link },
    details: [...(sender ? [['From', sender] as [string, string]] : []), [a.by, formatDeadline(env.expiresAt)]],
    notes: action === 'view' ? [UNEXPECTED] : [PERSONAL_LINK, UNEXPECTED],
  });
}

/** A nudge while the recipient still has to act: the same button and deadline, shorter. */
export function reminderEmail(env: EnvelopeMail, who: MailPerson, link: string, action: SigningAction): RenderedEmail {
  const a = ACTIONS[action];
  const sender = senderOf(env);
  const waiting = `${sender ?? 'The sender'} is still waiting for you to ${action === 'view' ? 'open' : action} ${named(env)}.`;
  return renderEmail({
    ...base(env, who),
    subject: `Reminder: ${env.subject ?? `please ${action === 'view' ? 'open' : action} ${subjectTitle(env)}`}`,
    preview: `${waiting} ${a.by}: ${formatDeadline(env.expiresAt)}.`,
    eyebrow: 'Reminder',
    paragraphs: [waiting],
    button: { label: a.button, url: link },
    details: [...(sender ? [['From', sender] as [string, string]] : []), [a.by, formatDeadline(env.expiresAt)]],
    notes: action === 'view' ? [] : [PERSONAL_LINK],
  });
}

/** Everyone signed: the sealed PDF is attached (by the caller) to this message. */
/** `notes`: further paragraphs (what the signers attached, in the recipient's language). */
export function completedEmail(env: EnvelopeMail, who: MailPerson, notes: string[] = []): RenderedEmail {
  const done = `Everyone has signed ${named(env)}. The signed PDF is attached: keep it for your records.`;
  return renderEmail({
    ...base(env, who),
    subject: `Completed: ${subjectTitle(env)}`,
    preview: done,
    eyebrow: 'Completed',
    tone: 'success',
    paragraphs: [done, 'The PDF carries a digital seal and ends with a certificate page that lists who signed and when.', ...notes],
    details: senderOf(env) ? [['From', senderOf(env)!]] : undefined,
  });
}

/** Someone declined: who, and the reason they gave; the signing is over. */
export function declinedEmail(env: EnvelopeMail, who: MailPerson, by: MailPerson & { action: SigningAction }, reason: string): RenderedEmail {
  const declined = `${by.name} (${by.email}) declined to ${by.action === 'approve' ? 'approve' : 'sign'} ${named(env)}.`;
  return renderEmail({
    ...base(env, who),
    subject: `Declined: ${subjectTitle(env)}`,
    preview: declined,
    eyebrow: 'Declined',
    tone: 'danger',
    paragraphs: [declined, 'The signing has ended: the document will not be completed and can no longer be signed. Nothing more is needed from you.'],
    quote: reason.trim() ? { label: `Reason given by ${by.name}`, text: reason } : undefined,
  });
}

/** The sender withdrew the request: the earlier link is dead. */
export function cancelledEmail(env: EnvelopeMail, who: MailPerson): RenderedEmail {
  const sender = senderOf(env);
  const cancelled = `The request${sender ? ` from ${sender}` : ''} to act on ${named(env)} was cancelled.`;
  return renderEmail({
    ...base(env, who),
    subject: `Cancelled: ${subjectTitle(env)}`,
    preview: cancelled,
    eyebrow: 'Cancelled',
    tone: 'danger',
    paragraphs: [cancelled, 'The link in the earlier email no longer works, and nothing more is needed from you.'],
  });
}
