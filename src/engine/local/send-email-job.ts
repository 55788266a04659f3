import { z } from 'zod';
import { defineJob } from '../../jobs/worker.js';
import type { EmailProvider } from '../../providers/email/index.js';
import type { BlobStorage } from '../../providers/storage/index.js';

export const SEND_EMAIL_JOB = 'email.send';

const ZEmailJobPayload = z.object({
  to: z.string(),
  subject: z.string(),
  text: z.string(),
  /** The HTML twin of `text`. Optional: jobs queued before HTML mail carry text only and still send. */
  html: z.string().optional(),
  /** Blobs attached by key, read when the job runs (payloads stay small). */
  attachments: z.array(z.object({ filename: z.string(), blobKey: z.string(), contentType: z.string() })).optional(),
  /** Test mode: the message goes to the outbox only, never to a real mailbox. */
  testSend: z.boolean(),
});

export type EmailJobPayload = z.infer<typeof ZEmailJobPayload>;

/**
 * One email. Test-mode mail always goes to the outbox provider, never to a real mailbox. The job may
 * run twice after a crash; the stable Message-ID lets a receiver see the duplicate.
 */
export const sendEmailJob = (deps: { email: EmailProvider; outbox: EmailProvider; storage: BlobStorage }) =>
  defineJob({
    type: SEND_EMAIL_JOB,
    payload: ZEmailJobPayload,
    async handle(p, ctx) {
      const attachments = [];
      for (const a of p.attachments ?? []) {
        const content = await deps.storage.get(a.blobKey);
        if (content) attachments.push({ filename: a.filename, content, contentType: a.contentType });
      }
      const provider = p.testSend ? deps.outbox : deps.email;
      await provider.send({ to: p.to, subject: p.subject, text: p.text, html: p.html, attachments, messageId: `<job-${ctx.jobId}@signet>` });
    },
  });
