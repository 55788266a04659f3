import type { NodemailerError, Transporter } from 'nodemailer';
import { EmailDeliveryError, toMailOptions, type EmailProvider } from './email-provider.js';

/**
 * The real mail provider: SMTP through a connection pool, so a burst of invitations reuses a few
 * connections instead of opening one per message. `smtpUrl` is `smtp[s]://[user:pass@]host[:port]`;
 * nodemailer's URL options (e.g. `?maxConnections=3`) apply.
 */
export function createSmtpEmail(smtpUrl: string, from: string): EmailProvider {
  // Loaded with the first message (as the outbox provider does): one module graph less at start.
  let transport: Promise<Transporter> | undefined;
  const pool = () => (transport ??= import('nodemailer').then((m) => m.default.createTransport({ url: smtpUrl, pool: true })));

  return {
    async send(msg) {
      try {
        const info = await (await pool()).sendMail(toMailOptions(msg, from));
        return { messageId: info.messageId };
      } catch (err) {
        const e = err as NodemailerError;
        // Never echo the URL: it may carry the SMTP password.
        throw new EmailDeliveryError(`SMTP send failed: ${e.message}`, { permanent: e.permanent === true, responseCode: e.responseCode, cause: err });
      }
    },
    async close() {
      (await transport)?.close();
    },
  };
}
