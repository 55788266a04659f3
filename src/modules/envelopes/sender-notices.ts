import { z } from 'zod';
import type { Db, Tx } from '../../db/client.js';
import type { SigningEngine } from '../../engine/engine.js';
import { resolveLocale } from '../../i18n/locales.js';
import { enqueue } from '../../jobs/queue.js';
import { defineJob } from '../../jobs/worker.js';
import type { EmailProvider } from '../../providers/email/index.js';
import { senderCompletedEmail, senderDeclinedEmail, senderExpiredEmail } from '../../providers/email/templates/index.js';
import type { AccountRepo } from '../account/account.repo.js';
import type { EnvelopeRow, StoredRecipientRow } from './envelopes.repo.js';

export const SENDER_NOTICE_JOB = 'envelope.sender-notice';

/**
 * A sealed PDF up to this size is attached to the sender's completion notice; a larger one is linked
 * (the dashboard's download): many mail servers refuse a message over 10-25 MB, and base64 adds a third.
 */
export const SENDER_ATTACHMENT_MAX_BYTES = 10 * 1024 * 1024;

const ENDS = { COMPLETED: 'completed', REJECTED: 'declined', EXPIRED: 'expired' } as const;

const ZPerson = z.object({ name: z.string(), email: z.string() });

/** What was decided when the envelope ended: the address, the facts; the job renders and sends them. */
const ZSenderNotice = z.object({
  envelopeId: z.uuid(),
  engineEnvelopeId: z.string(),
  kind: z.enum(['completed', 'declined', 'expired']),
  to: z.string(),
  testSend: z.boolean(),
  at: z.iso.datetime(),
  title: z.string().nullable(),
  accountName: z.string(),
  envelopeUrl: z.string(),
  settingsUrl: z.string(),
  recipients: z.array(ZPerson.extend({ role: z.string(), status: z.string() })),
  by: ZPerson.optional(),
  reason: z.string().nullable().optional(),
  /** The account's default language when the envelope ended (absent in jobs queued before there was one: English). */
  locale: z.string().nullable().optional(),
});
export type TSenderNotice = z.infer<typeof ZSenderNotice>;

/**
 * The sender hears how each envelope ended (issue 34, item 8): completed, declined or expired, whatever
 * the engine, since every end passes through the envelope sync, which calls `ended` in the transaction
 * that records it. A cancellation is the sender's own act and is not told back.
 */
export function createSenderNotices(deps: { accounts: Pick<AccountRepo, 'findCustomer'>; dashboardUrl: string }) {
  return {
    async ended(tx: Tx, e: { envelope: EnvelopeRow; recipients: StoredRecipientRow[]; status: string; at: Date }): Promise<void> {
      const kind = ENDS[e.status as keyof typeof ENDS];
      if (!kind) return;
      const customer = await deps.accounts.findCustomer(tx, e.envelope.customerId);
      if (!customer?.senderNotifications) return;
      const to = customer.notificationEmail ?? customer.email;
      // A wallet account's email is a synthetic `<address>@wallet.invalid`: nothing is mailed there.
      if (to.endsWith('.invalid')) return;
      const envelopeUrl = `${deps.dashboardUrl}/envelopes/${e.envelope.id}${e.envelope.mode === 'test' ? '?mode=test' : ''}`;
      const by = kind === 'declined' ? (e.recipients.find((r) => r.signingStatus === 'REJECTED') ?? null) : null;
      const payload: TSenderNotice = {
        envelopeId: e.envelope.id,
        engineEnvelopeId: e.envelope.engineEnvelopeId,
        kind,
        to,
        // As its invitations: a test envelope's notices go to the outbox only.
        testSend: e.envelope.testSend,
        at: (kind === 'completed' ? (e.envelope.completedAt ?? e.at) : kind === 'declined' ? (by?.rejectedAt ?? e.at) : e.at).toISOString(),
        title: e.envelope.title,
        accountName: customer.name,
        envelopeUrl,
        settingsUrl: `${deps.dashboardUrl}/settings`,
        recipients: e.recipients.map((r) => ({ name: r.name, email: r.email, role: r.role, status: r.signingStatus })),
        ...(by && { by: { name: by.name, email: by.email }, reason: by.rejectionReason }),
        locale: customer.defaultLocale,
      };
      // An envelope ends once (the sync moves it under its lock); the key keeps it one notice regardless.
      await enqueue(tx, { type: SENDER_NOTICE_JOB, payload, maxAttempts: 8, dedupeKey: `sender-notice:${e.envelope.id}` });
    },
  };
}

export type SenderNotices = ReturnType<typeof createSenderNotices>;

/**
 * Renders and sends one notice. A completion reads the sealed PDF from the engine (local or remote)
 * after the commit, and attaches it or, over the limit, links its download instead. Safe to run twice:
 * the Message-ID is the envelope's, so a receiver sees a repeat as the same message.
 */
export const senderNoticeJob = (deps: { db: Db; engine: Pick<SigningEngine, 'signedPdf' | 'attachments' | 'openAttachment'>; email: EmailProvider; outbox: EmailProvider; attachMaxBytes?: number }) =>
  defineJob({
    type: SENDER_NOTICE_JOB,
    payload: ZSenderNotice,
    async handle(p) {
      const base = { title: p.title, accountName: p.accountName, envelopeUrl: p.envelopeUrl, settingsUrl: p.settingsUrl, recipients: p.recipients, test: p.testSend, locale: resolveLocale(p.locale) };
      const at = new Date(p.at);
      const attachments = [];
      let mail;
      if (p.kind === 'completed') {
        const pdf = await deps.engine.signedPdf(deps.db, p.engineEnvelopeId);
        const attached = pdf.byteLength <= (deps.attachMaxBytes ?? SENDER_ATTACHMENT_MAX_BYTES);
        if (attached) attachments.push({ filename: `${(p.title ?? 'document').replace(/[^\w.-]+/g, '_').slice(0, 80)}-signed.pdf`, content: pdf, contentType: 'application/pdf' });
        const files = await signerFiles(deps, p.engineEnvelopeId, deps.attachMaxBytes ?? SENDER_ATTACHMENT_MAX_BYTES);
        attachments.push(...files.attached);
        const [path, query = ''] = p.envelopeUrl.split('?');
        mail = senderCompletedEmail(attached ? base : { ...base, envelopeUrl: `${path}/download${query ? `?${query}` : ''}` }, { completedAt: at, attached, signerFiles: { count: files.count, attached: files.attached.length > 0, envelopeId: p.envelopeId } });
      } else if (p.kind === 'declined') {
        mail = senderDeclinedEmail(base, { by: p.by ?? { name: 'A recipient', email: 'unknown' }, reason: p.reason ?? null, declinedAt: at });
      } else {
        mail = senderExpiredEmail(base, { expiredAt: at });
      }
      const provider = p.testSend ? deps.outbox : deps.email;
      await provider.send({ to: p.to, subject: mail.subject, text: mail.text, html: mail.html, attachments, messageId: `<sender-notice-${p.envelopeId}@signet>` });
    },
  });

/**
 * The signers' attachments (FILE fields) for the sender's completion email: all of them when they fit
 * `maxBytes` together, else none (the email then says they are in the API). Read after the commit, in the job.
 */
async function signerFiles(deps: { db: Db; engine: Pick<SigningEngine, 'attachments' | 'openAttachment'> }, engineEnvelopeId: string, maxBytes: number) {
  const listed = deps.engine.attachments ? await deps.engine.attachments(deps.db, engineEnvelopeId) : [];
  const attached: { filename: string; content: Buffer; contentType: string }[] = [];
  if (listed.length === 0 || listed.reduce((n, a) => n + a.size, 0) > maxBytes || !deps.engine.openAttachment) return { count: listed.length, attached };
  for (const a of listed) {
    const opened = await deps.engine.openAttachment(deps.db, engineEnvelopeId, a.id);
    if (!opened) continue;
    const chunks: Buffer[] = [];
    for await (const chunk of opened.stream) chunks.push(Buffer.from(chunk as Uint8Array));
    attached.push({ filename: a.name, content: Buffer.concat(chunks), contentType: a.contentType });
  }
  return { count: listed.length, attached };
}
