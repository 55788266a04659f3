/**
 * What the sender hears about the end of an envelope (completed, declined, expired), at the account's
 * notification address. Addressed to the account holder, not to a recipient: no signing link, and the
 * footer says why the account gets it and where to turn it off.
 */
import { oneLine, renderEmail, type RenderedEmail } from './layout.js';
import { formatDeadline, type MailPerson } from './signing.js';

/** The envelope as the sender's notices describe it. */
export type SenderMail = {
  title: string | null;
  /** The account's display name, for the greeting. */
  accountName: string;
  /** The envelope's page in the dashboard (its events, the download). */
  envelopeUrl: string;
  /** The account's settings page, where these notices are turned off or redirected. */
  settingsUrl: string;
  recipients: (MailPerson & { role: string; status: string })[];
  test: boolean;
};

const quoted = (title: string) => `“${title}”`;
const named = (m: SenderMail) => (m.title ? quoted(m.title) : 'your document');
const subjectTitle = (m: SenderMail) => (m.title ? oneLine(m.title, 80) : 'Untitled document');

function base(m: SenderMail) {
  return {
    greeting: `Hello ${m.accountName},`,
    heading: m.title ?? 'Untitled document',
    test: m.test,
    footer: [
      'You receive this email because you sent this document with Signet.',
      `To send these notices elsewhere or turn them off, open your settings: ${m.settingsUrl}`,
    ],
  };
}

const people = (m: SenderMail) => m.recipients.map((r) => `${r.name} <${r.email}>`).join(', ');

/**
 * Everyone signed. `attached`: the sealed PDF is attached; otherwise (over the attachment limit) the
 * message says so and the button leads to the download in the dashboard.
 */
export function senderCompletedEmail(m: SenderMail, o: { completedAt: Date; attached: boolean; signerFiles?: { count: number; attached: boolean; envelopeId: string } }): RenderedEmail {
  const done = `Everyone has signed ${named(m)}.`;
  const file = o.attached
    ? 'The sealed PDF is attached: it carries a digital seal and ends with a certificate page that lists who signed and when.'
    : 'The sealed PDF is too large to attach: download it from the dashboard. It carries a digital seal and ends with a certificate page that lists who signed and when.';
  return renderEmail({
    ...base(m),
    subject: `Completed: ${subjectTitle(m)}`,
    preview: `${done} ${o.attached ? 'The sealed PDF is attached.' : 'Download the sealed PDF from the dashboard.'}`,
    eyebrow: 'Completed',
    tone: 'success',
    paragraphs: [done, file, ...signerFilesNote(o.signerFiles)],
    button: { label: o.attached ? 'View in the dashboard' : 'Download the signed PDF', url: m.envelopeUrl },
    details: [
      ['Completed', formatDeadline(o.completedAt)],
      ['Recipients', people(m)],
    ],
  });
}

/** A recipient declined: who, and the reason they gave; the envelope is over. */
export function senderDeclinedEmail(m: SenderMail, o: { by: MailPerson; reason: string | null; declinedAt: Date }): RenderedEmail {
  const declined = `${o.by.name} (${o.by.email}) declined ${named(m)}. The signing has ended: the document will not be completed.`;
  return renderEmail({
    ...base(m),
    subject: `${oneLine(o.by.name, 60)} declined: ${subjectTitle(m)}`,
    preview: declined,
    eyebrow: 'Declined',
    tone: 'danger',
    paragraphs: [declined, 'To try again, send a new envelope, changed as needed.'],
    quote: o.reason?.trim() ? { label: `Reason given by ${o.by.name}`, text: o.reason } : undefined,
    button: { label: 'View in the dashboard', url: m.envelopeUrl },
    details: [
      ['Declined', formatDeadline(o.declinedAt)],
      ...(o.reason?.trim() ? [] : [['Reason', 'None given'] as [string, string]]),
    ],
  });
}

/** The signing window closed before everyone acted: who had not. */
export function senderExpiredEmail(m: SenderMail, o: { expiredAt: Date }): RenderedEmail {
  const waiting = m.recipients.filter((r) => r.status !== 'SIGNED' && (r.role === 'SIGNER' || r.role === 'APPROVER'));
  const expired = `${named(m).charAt(0).toUpperCase()}${named(m).slice(1)} expired before everyone signed: its links no longer work.`;
  return renderEmail({
    ...base(m),
    subject: `Expired: ${subjectTitle(m)}`,
    preview: expired,
    eyebrow: 'Expired',
    tone: 'danger',
    paragraphs: [expired, 'To try again, send a new envelope with a later deadline.'],
    button: { label: 'View in the dashboard', url: m.envelopeUrl },
    details: [
      ['Expired', formatDeadline(o.expiredAt)],
      ...(waiting.length ? [['Still to act', waiting.map((r) => `${r.name} <${r.email}>`).join(', ')] as [string, string]] : []),
    ],
  });
}

/** What the sender is told of the files signers attached (FILE fields): attached, or where to fetch them. */
function signerFilesNote(f: { count: number; attached: boolean; envelopeId: string } | undefined): string[] {
  if (!f || f.count === 0) return [];
  const files = f.count === 1 ? 'The file a signer attached is' : `The ${f.count} files signers attached are`;
  return [f.attached ? `${files} attached too.` : `${files} too large to attach: download them through the API (GET /v1/envelopes/${f.envelopeId}/attachments).`];
}
