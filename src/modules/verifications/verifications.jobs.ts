import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { defineJob, type PeriodicTask } from '../../jobs/worker.js';
import type { EmailProvider } from '../../providers/email/index.js';
import type { VerificationCodes } from './verification-codes.js';
import type { VerificationsService } from './verifications.service.js';

export const SEND_CODE_JOB = 'verification.send-code';

/**
 * Mails one verification code. The payload holds the code sealed (never in the clear); the job may run
 * twice after a crash, and the stable Message-ID lets a receiver see the duplicate. A code past its 10
 * minutes or replaced by a newer one is not sent at all.
 */
export const sendCodeJob = (deps: { db: Db; codes: Pick<VerificationCodes, 'codeMessage'>; email: EmailProvider; outbox: EmailProvider }) =>
  defineJob({
    type: SEND_CODE_JOB,
    payload: z.object({ verificationId: z.guid(), sealedCode: z.string().min(1).max(200) }),
    async handle({ verificationId, sealedCode }, ctx) {
      const found = await deps.codes.codeMessage(deps.db, verificationId, sealedCode);
      if (!found) return;
      await (found.testSend ? deps.outbox : deps.email).send({ ...found.message, messageId: `<verify-code-${ctx.jobId}@signet>` });
    },
  });

/** Pending verifications past expiresAt are marked expired (reads already show them so). */
export const verificationPeriodicTasks = (deps: { verifications: Pick<VerificationsService, 'expireDue'> }): PeriodicTask[] => [
  { name: 'expire-verifications', run: async (tx) => void (await deps.verifications.expireDue(tx)) },
];
