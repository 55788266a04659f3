import { t } from '../../../i18n/catalogue.js';
import { DEFAULT_LOCALE, type Locale } from '../../../i18n/locales.js';
import { oneLine, renderEmail, type EmailContent, type RenderedEmail } from './layout.js';
import { automaticReminderEmail } from './reminders.js';

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

export type MailPerson = {
  name: string;
  email: string;
  /** The reader's language, already resolved (the recipient's, else the account's default); English when unset. */
  locale?: Locale;
  /** The reader's IANA time zone when known (reported by their browser); times are given in UTC otherwise. */
  timeZone?: string | null;
};

const ACTIONS = {
  sign: { eyebrow: 'Signature requested', button: 'Review and sign', ask: 'review and sign', by: 'Sign by' },
  approve: { eyebrow: 'Approval requested', button: 'Review and approve', ask: 'review and approve', by: 'Approve by' },
  view: { eyebrow: 'Document shared with you', button: 'View document', ask: 'read', by: 'Link works until' },
} as const;

const dateFormats = new Map<string, { date: Intl.DateTimeFormat; time: Intl.DateTimeFormat }>();
/** The formatters of a locale and zone; undefined for a zone this runtime does not know (it was checked when recorded; a later runtime might not). */
function formatsOf(locale: Locale, timeZone: string) {
  const id = `${locale}\0${timeZone}`;
  if (!dateFormats.has(id)) {
    // English keeps its day-month-year order of en-GB, as it always had.
    const tag = locale === 'en' ? 'en-GB' : locale;
    try {
      dateFormats.set(id, {
        date: new Intl.DateTimeFormat(tag, { day: 'numeric', month: 'long', year: 'numeric', timeZone }),
        time: new Intl.DateTimeFormat(tag, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone }),
      });
    } catch {
      return undefined;
    }
  }
  return dateFormats.get(id);
}

/**
 * "14 March 2026, 14:30 UTC" ("14. März 2026, 15:30 Europe/Berlin"): in the reader's language, and in
 * their time zone when we know it; otherwise UTC, and we say which zone we mean.
 */
export function formatDeadline(at: Date, locale: Locale = DEFAULT_LOCALE, timeZone?: string | null): string {
  const zoned = timeZone ? formatsOf(locale, timeZone) : undefined;
  const f = zoned ?? formatsOf(locale, 'UTC')!;
  return t(locale, 'email.dateTime', { date: f.date.format(at), time: f.time.format(at), zone: zoned ? timeZone : 'UTC' });
}

const localeOf = (who: MailPerson): Locale => who.locale ?? DEFAULT_LOCALE;
const deadlineOf = (env: EnvelopeMail, who: MailPerson) => formatDeadline(env.expiresAt, localeOf(who), who.timeZone);
const quoted = (locale: Locale, title: string) => t(locale, 'email.quoted', { title });
const named = (env: EnvelopeMail, locale: Locale) => (env.title ? quoted(locale, env.title) : t(locale, 'email.aDocument'));
/** Titles in subjects are cut short: the subject must stay readable in an inbox list. */
const subjectTitle = (env: EnvelopeMail, locale: Locale) => (env.title ? quoted(locale, oneLine(env.title, 80)) : t(locale, 'email.aDocument'));
const heading = (env: EnvelopeMail, locale: Locale) => env.title ?? t(locale, 'email.untitled');
const senderOf = (env: EnvelopeMail) => env.senderName?.trim() || null;

function footer(env: EnvelopeMail, locale: Locale): string[] {
  const sender = senderOf(env);
  return [sender ? t(locale, 'email.footerSender', { sender }) : t(locale, 'email.footerNoSender'), t(locale, 'email.footerWhy', { document: named(env, locale) })];
}

function base(env: EnvelopeMail, who: MailPerson): Pick<EmailContent, 'greeting' | 'heading' | 'footer' | 'test' | 'accent' | 'logo' | 'locale'> {
  const locale = localeOf(who);
  const logo = env.logoUrl ? { url: env.logoUrl, alt: senderOf(env) ?? t(locale, 'email.senderLogo') } : undefined;
  return { greeting: t(locale, 'email.greeting', { name: who.name }), heading: heading(env, locale), footer: footer(env, locale), test: env.test, accent: env.accent, logo, locale };
}

/** The first message a recipient gets: who asks what, the sender's message, one button, the deadline. */
export function invitationEmail(env: EnvelopeMail, who: MailPerson, link: string, action: SigningAction): RenderedEmail {
  const locale = localeOf(who);
  const sender = senderOf(env);
  const document = named(env, locale);
  const asks =
    action === 'view'
      ? t(locale, sender ? 'email.sharedBy' : 'email.sharedAnonymous', { sender, document })
      : t(locale, sender ? 'email.asksBy' : 'email.asksAnonymous', { sender, action, document });
  const by = t(locale, 'email.deadlineLabel', { action });
  const deadline = deadlineOf(env, who);
  return renderEmail({
    ...base(env, who),
    // Invitations' subjects start with "Please", as they always have: recipients' mail filters may rely on it.
    subject: env.subject ?? t(locale, 'email.invitationSubject', { action, document: subjectTitle(env, locale) }),
    preview: t(locale, 'email.previewDeadline', { text: asks, label: by, deadline }),
    eyebrow: t(locale, 'email.eyebrow', { action }),
    paragraphs: [asks],
    quote: env.message ? { label: sender ? t(locale, 'email.messageFrom', { sender }) : t(locale, 'email.messageFromSender'), text: env.message } : undefined,
    button: { label: t(locale, 'email.button', { action }), url: link },
    details: [...(sender ? [[t(locale, 'email.from'), sender] as [string, string]] : []), [by, deadline]],
    notes: action === 'view' ? [t(locale, 'email.unexpected')] : [t(locale, 'email.personalLink'), t(locale, 'email.unexpected')],
  });
}

/**
 * A nudge while the recipient still has to act (the manual resend): the same button and deadline, shorter.
 * Its words are the reminders' (namespace email-reminder, their own work); until then it is English.
 */
export function reminderEmail(env: EnvelopeMail, who: MailPerson, link: string, action: SigningAction): RenderedEmail {
  // The sender's manual resend: the automatic reminder's message, in the recipient's language.
  return automaticReminderEmail(env, { ...who, action, locale: localeOf(who), timeZone: who.timeZone ?? null }, link, 'reminder');
}

/** Everyone signed: the sealed PDF is attached (by the caller) to this message. */
export function completedEmail(env: EnvelopeMail, who: MailPerson, notes: string[] = []): RenderedEmail {
  const locale = localeOf(who);
  const done = t(locale, 'email.completedDone', { document: named(env, locale) });
  return renderEmail({
    ...base(env, who),
    subject: t(locale, 'email.completedSubject', { document: subjectTitle(env, locale) }),
    preview: done,
    eyebrow: t(locale, 'email.completedEyebrow'),
    tone: 'success',
    paragraphs: [done, t(locale, 'email.completedSeal'), ...notes],
    details: senderOf(env) ? [[t(locale, 'email.from'), senderOf(env)!]] : undefined,
  });
}

/** Someone declined: who, and the reason they gave; the signing is over. */
export function declinedEmail(env: EnvelopeMail, who: MailPerson, by: MailPerson & { action: SigningAction }, reason: string): RenderedEmail {
  const locale = localeOf(who);
  const declined = t(locale, 'email.declinedBy', { name: by.name, email: by.email, action: by.action, document: named(env, locale) });
  return renderEmail({
    ...base(env, who),
    subject: t(locale, 'email.declinedSubject', { document: subjectTitle(env, locale) }),
    preview: declined,
    eyebrow: t(locale, 'email.declinedEyebrow'),
    tone: 'danger',
    paragraphs: [declined, t(locale, 'email.declinedEnded')],
    quote: reason.trim() ? { label: t(locale, 'email.reasonBy', { name: by.name }), text: reason } : undefined,
  });
}

/** The sender withdrew the request: the earlier link is dead. */
export function cancelledEmail(env: EnvelopeMail, who: MailPerson): RenderedEmail {
  const locale = localeOf(who);
  const sender = senderOf(env);
  const cancelled = t(locale, sender ? 'email.cancelledBy' : 'email.cancelledAnonymous', { sender, document: named(env, locale) });
  return renderEmail({
    ...base(env, who),
    subject: t(locale, 'email.cancelledSubject', { document: subjectTitle(env, locale) }),
    preview: cancelled,
    eyebrow: t(locale, 'email.cancelledEyebrow'),
    tone: 'danger',
    paragraphs: [cancelled, t(locale, 'email.cancelledLink')],
  });
}
