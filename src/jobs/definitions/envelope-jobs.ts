import type { Db } from '../../db/client.js';
import { SEND_EMAIL_JOB, type EmailJobPayload } from '../../engine/local/notifications.js';
import { DISTRIBUTE_JOB, REFUND_JOB, type EnvelopesService } from '../../modules/envelopes/envelopes.service.js';
import type { EmailProvider } from '../../providers/email/index.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import type { JobDefinition, PeriodicTask } from '../worker.js';

/** PENDING → SENT: the invitations of a create-and-send go out after the request committed. */
export function distributeJob(deps: { db: Db; envelopes: EnvelopesService }): JobDefinition {
  return {
    type: DISTRIBUTE_JOB,
    handle: async (payload) => deps.db.transaction((tx) => deps.envelopes.distribute(tx, (payload as { envelopeId: string }).envelopeId)),
  };
}

/**
 * One email. Test-mode mail always goes to the outbox provider, never to a real mailbox. The job may
 * run twice after a crash; the stable Message-ID lets a receiver see the duplicate.
 */
export function sendEmailJob(deps: { email: EmailProvider; outbox: EmailProvider; storage: BlobStorage }): JobDefinition {
  return {
    type: SEND_EMAIL_JOB,
    async handle(payload, ctx) {
      const p = payload as EmailJobPayload;
      const attachments = [];
      for (const a of p.attachments ?? []) {
        const content = await deps.storage.get(a.blobKey);
        if (content) attachments.push({ filename: a.filename, content, contentType: a.contentType });
      }
      const provider = p.testSend ? deps.outbox : deps.email;
      await provider.send({ to: p.to, subject: p.subject, text: p.text, attachments, messageId: `<job-${ctx.jobId}@signet>` });
    },
  };
}

/** Credits a refund exactly once; each failure is recorded, the last one raises an operator alert. */
export function refundJob(deps: { db: Db; envelopes: EnvelopesService }): JobDefinition {
  return {
    type: REFUND_JOB,
    async handle(payload, ctx) {
      const { refundId } = payload as { refundId: string };
      try {
        await deps.db.transaction((tx) => deps.envelopes.runRefund(tx, refundId));
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        await deps.db.transaction((tx) => deps.envelopes.recordRefundFailure(tx, refundId, message, ctx.attempt >= ctx.maxAttempts));
        throw err;
      }
    },
  };
}

export function envelopePeriodicTasks(deps: { envelopes: EnvelopesService }): PeriodicTask[] {
  return [
    { name: 'expire-envelopes', run: async (tx) => void (await deps.envelopes.expireDue(tx)) },
    { name: 'purge-documents', run: async (tx) => void (await deps.envelopes.purgeDue(tx)) },
  ];
}
