/**
 * What the sender hears about the end of an envelope (completed, declined, expired), at the account's
 * notification address. Addressed to the account holder, not to a recipient: no signing link, and the
 * footer says why the account gets it and where to turn it off.
 */
import { t } from '../../../i18n/catalogue.js';
import { DEFAULT_LOCALE, type Locale } from '../../../i18n/locales.js';
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
  /** The account's default language (customers.default_locale); English when unset. */
  locale?: Locale;
};

const lang = (m: SenderMail): Locale => m.locale ?? DEFAULT_LOCALE;
const named = (m: SenderMail) => (m.title ? t(lang(m), 'email.quoted', { title: m.title }) : t(lang(m), 'email-sender.yourDocument'));
const subjectTitle = (m: SenderMail) => (m.title ? oneLine(m.title, 80) : t(lang(m), 'email.untitled'));

function base(m: SenderMail) {
  const locale = lang(m);
  return {
    greeting: t(locale, 'email.greeting', { name: m.accountName }),
    heading: m.title ?? t(locale, 'email.untitled'),
    test: m.test,
    locale,
    footer: [t(locale, 'email-sender.footerWhy'), t(locale, 'email-sender.footerSettings', { url: m.settingsUrl })],
  };
}

const people = (m: SenderMail) => m.recipients.map((r) => `${r.name} <${r.email}>`).join(', ');

/**
 * Everyone signed. `attached`: the sealed PDF is attached; otherwise (over the attachment limit) the
 * message says so and the button leads to the download in the dashboard.
 */
export function senderCompletedEmail(m: SenderMail, o: { completedAt: Date; attached: boolean; signerFiles?: { count: number; attached: boolean; envelopeId: string } }): RenderedEmail {
  const locale = lang(m);
  const done = t(locale, 'email-sender.completedDone', { document: named(m) });
  return renderEmail({
    ...base(m),
    subject: t(locale, 'email-sender.completedSubject', { title: subjectTitle(m) }),
    preview: t(locale, 'email-sender.previewCompleted', { done, attached: o.attached ? 'yes' : 'no' }),
    eyebrow: t(locale, 'email.completedEyebrow'),
    tone: 'success',
    paragraphs: [done, t(locale, o.attached ? 'email-sender.fileAttached' : 'email-sender.fileTooLarge'), ...signerFilesNote(locale, o.signerFiles)],
    button: { label: t(locale, o.attached ? 'email-sender.viewDashboard' : 'email-sender.downloadSigned'), url: m.envelopeUrl },
    details: [
      [t(locale, 'email-sender.detailCompleted'), formatDeadline(o.completedAt, locale)],
      [t(locale, 'email-sender.detailRecipients'), people(m)],
    ],
  });
}

/** A recipient declined: who, and the reason they gave; the envelope is over. */
export function senderDeclinedEmail(m: SenderMail, o: { by: MailPerson; reason: string | null; declinedAt: Date }): RenderedEmail {
  const locale = lang(m);
  const declined = t(locale, 'email-sender.declined', { name: o.by.name, email: o.by.email, document: named(m) });
  return renderEmail({
    ...base(m),
    subject: t(locale, 'email-sender.declinedSubject', { name: oneLine(o.by.name, 60), title: subjectTitle(m) }),
    preview: declined,
    eyebrow: t(locale, 'email.declinedEyebrow'),
    tone: 'danger',
    paragraphs: [declined, t(locale, 'email-sender.tryAgainChanged')],
    quote: o.reason?.trim() ? { label: t(locale, 'email.reasonBy', { name: o.by.name }), text: o.reason } : undefined,
    button: { label: t(locale, 'email-sender.viewDashboard'), url: m.envelopeUrl },
    details: [
      [t(locale, 'email-sender.detailDeclined'), formatDeadline(o.declinedAt, locale)],
      ...(o.reason?.trim() ? [] : [[t(locale, 'email-sender.detailReason'), t(locale, 'email-sender.noneGiven')] as [string, string]]),
    ],
  });
}

/** The signing window closed before everyone acted: who had not. */
export function senderExpiredEmail(m: SenderMail, o: { expiredAt: Date }): RenderedEmail {
  const locale = lang(m);
  const waiting = m.recipients.filter((r) => r.status !== 'SIGNED' && (r.role === 'SIGNER' || r.role === 'APPROVER'));
  const expired = m.title ? t(locale, 'email-sender.expiredTitled', { document: named(m) }) : t(locale, 'email-sender.expiredUntitled');
  return renderEmail({
    ...base(m),
    subject: t(locale, 'email-sender.expiredSubject', { title: subjectTitle(m) }),
    preview: expired,
    eyebrow: t(locale, 'email-sender.expiredEyebrow'),
    tone: 'danger',
    paragraphs: [expired, t(locale, 'email-sender.tryAgainLater')],
    button: { label: t(locale, 'email-sender.viewDashboard'), url: m.envelopeUrl },
    details: [
      [t(locale, 'email-sender.detailExpired'), formatDeadline(o.expiredAt, locale)],
      ...(waiting.length ? [[t(locale, 'email-sender.stillToAct'), waiting.map((r) => `${r.name} <${r.email}>`).join(', ')] as [string, string]] : []),
    ],
  });
}

/** What the sender is told of the files signers attached (FILE fields): attached, or where to fetch them. */
function signerFilesNote(locale: Locale, f: { count: number; attached: boolean; envelopeId: string } | undefined): string[] {
  if (!f || f.count === 0) return [];
  return [t(locale, f.attached ? 'email-sender.signerFilesAttached' : 'email-sender.signerFilesTooLarge', { count: f.count, envelopeId: f.envelopeId })];
}
