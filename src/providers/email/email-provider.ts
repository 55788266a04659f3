import type { SendMailOptions } from 'nodemailer';

export type EmailAttachment = { filename: string; content: Uint8Array; contentType: string };

export type EmailMessage = {
  to: string;
  subject: string;
  text: string;
  html?: string;
  attachments?: EmailAttachment[];
  headers?: Record<string, string>;
  /**
   * A stable Message-ID (`<id@host>`) for this logical message. A job that may run twice passes the
   * same value on every attempt, so a duplicate delivery can be recognised by the receiving side.
   * Generated when absent.
   */
  messageId?: string;
};

export type SentEmail = { messageId: string };

/** Outgoing mail. The built-in default writes .eml files to DATA_DIR/outbox; the real adapter speaks SMTP. */
export interface EmailProvider {
  send(msg: EmailMessage): Promise<SentEmail>;
  /** Releases connections (the SMTP pool); the provider is unusable afterwards. */
  close(): Promise<void>;
}

/**
 * A send that failed. `permanent` is true when the server refused the message for good (an SMTP 5xx
 * other than 503): retrying the same message cannot succeed. Connection failures and 4xx are transient.
 */
export class EmailDeliveryError extends Error {
  readonly permanent: boolean;
  readonly responseCode: number | undefined;
  constructor(message: string, opts: { permanent: boolean; responseCode?: number; cause?: unknown }) {
    super(message, { cause: opts.cause });
    this.name = 'EmailDeliveryError';
    this.permanent = opts.permanent;
    this.responseCode = opts.responseCode;
  }
}

/** Our message → nodemailer's options. Attachment bytes are wrapped, not copied. */
export function toMailOptions(msg: EmailMessage, from: string): SendMailOptions {
  return {
    from,
    to: msg.to,
    subject: msg.subject,
    text: msg.text,
    ...(msg.html !== undefined && { html: msg.html }),
    ...(msg.headers && { headers: msg.headers }),
    ...(msg.messageId && { messageId: msg.messageId }),
    attachments: (msg.attachments ?? []).map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength),
    })),
  };
}
