import { t } from '../../../i18n/catalogue.js';
import { resolveLocale, type Locale } from '../../../i18n/locales.js';
import { oneLine, renderEmail, type RenderedEmail } from './layout.js';
import type { EnvelopeMail, MailPerson } from './signing.js';

/** An automatic reminder, or the one warning before the signing window closes. */
export type ReminderKind = 'reminder' | 'expiry_warning';

export type ReminderRecipient = MailPerson & {
  /** Automatic reminders go to those who act; a manual resend reminds a viewer too. */
  action: 'sign' | 'approve' | 'view';
  /** The recipient's language (src/i18n/locales.ts); anything else: English. */
  locale: string | null;
  /** The IANA time zone the recipient's browser reported; none (or an unknown one): UTC, named. */
  timeZone: string | null;
};

const NS = 'email-reminder';
const DAY = 86_400_000;

/** The deadline in the reader's language and time zone, with the zone named ("14. März 2026 um 15:30 MEZ"). */
export function formatDeadlineIn(at: Date, locale: Locale, timeZone: string | null): string {
  const options: Intl.DateTimeFormatOptions = { dateStyle: 'long', timeStyle: 'short' };
  try {
    if (timeZone) return new Intl.DateTimeFormat(locale, { ...options, timeZone }).format(at) + ` (${zoneName(at, locale, timeZone)})`;
  } catch {
    // A zone the runtime does not know: UTC below.
  }
  return `${new Intl.DateTimeFormat(locale, { ...options, timeZone: 'UTC' }).format(at)} (UTC)`;
}

const zoneName = (at: Date, locale: Locale, timeZone: string) =>
  new Intl.DateTimeFormat(locale, { timeZone, timeZoneName: 'short' }).formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? timeZone;

/**
 * The automatic reminder and the expiry warning, in the recipient's language: the invitation's look
 * (layout.ts), the same personal link and button, and the deadline in their time zone.
 */
export function automaticReminderEmail(env: EnvelopeMail, who: ReminderRecipient, link: string, kind: ReminderKind, now = new Date()): RenderedEmail {
  const locale = resolveLocale(who.locale);
  const m = (key: string, values?: Record<string, string | number>) => t(locale, `${NS}.${key}`, values);
  const sender = env.senderName?.trim() || '';
  const hasSender = sender ? 'yes' : 'no';
  const document = env.title ? `“${env.title}”` : m('aDocument');
  const inSubject = env.title ? `“${oneLine(env.title, 80)}”` : m('aDocument');
  const days = Math.max(1, Math.ceil((env.expiresAt.getTime() - now.getTime()) / DAY));
  const deadline = formatDeadlineIn(env.expiresAt, locale, who.timeZone);
  const waiting = m('waiting', { hasSender, sender, action: who.action, document });
  const paragraphs = kind === 'expiry_warning' ? [waiting, m('expiring', { days, action: who.action })] : [waiting];
  const subject =
    kind === 'expiry_warning'
      ? m('subjectExpiry', { days, document: inSubject })
      : env.subject
        ? m('subjectReminderCustom', { subject: env.subject })
        : m('subjectReminder', { action: who.action, document: inSubject });
  const logo = env.logoUrl ? { url: env.logoUrl, alt: sender || 'Logo' } : undefined;
  return renderEmail({
    subject,
    preview: `${paragraphs.join(' ')} ${m('deadline', { action: who.action })}: ${deadline}.`,
    eyebrow: m(kind === 'expiry_warning' ? 'eyebrowExpiry' : 'eyebrowReminder'),
    heading: env.title ?? m('untitled'),
    greeting: m('greeting', { name: who.name }),
    paragraphs,
    button: { label: m('button', { action: who.action }), url: link },
    details: [...(sender ? [[m('from'), sender] as [string, string]] : []), [m('deadline', { action: who.action }), deadline]],
    notes: [m('personalLink')],
    footer: [m('footerSender', { hasSender, sender }), m('footerWhy', { document })],
    test: env.test,
    accent: env.accent,
    logo,
    locale,
  });
}
