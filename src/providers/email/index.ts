import { createOutboxEmail } from './outbox-email.js';
import { createSmtpEmail } from './smtp-email.js';
import type { EmailProvider } from './email-provider.js';

export { EmailDeliveryError, type EmailAttachment, type EmailMessage, type EmailProvider, type SentEmail } from './email-provider.js';
export { createOutboxEmail } from './outbox-email.js';
export { createSmtpEmail } from './smtp-email.js';

/** SMTP when SMTP_URL is set, else the outbox directory: mail works with no setup. */
export function createEmailProvider(opts: { smtpUrl?: string; from: string; outboxDir: string }): EmailProvider {
  return opts.smtpUrl ? createSmtpEmail(opts.smtpUrl, opts.from) : createOutboxEmail(opts.outboxDir, opts.from);
}
