import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { defineJob, type PeriodicTask } from '../../jobs/worker.js';
import type { EmailProvider } from '../../providers/email/index.js';
import type { SignInService } from './sign-in.service.js';

export const SEND_SIGN_IN_LINK_JOB = 'dashboard.send-sign-in-link';

/**
 * Mails one sign-in link. The payload names the attempt only: the link is derived again from its salt
 * when the job runs, so the job table holds no credential. A link used or expired meanwhile is not
 * sent; a second run after a crash sends the same Message-ID, so a receiver can see the duplicate.
 */
export const sendSignInLinkJob = (deps: { db: Db; signIn: Pick<SignInService, 'linkMessage'>; email: EmailProvider }) =>
  defineJob({
    type: SEND_SIGN_IN_LINK_JOB,
    payload: z.object({ signInId: z.guid() }),
    async handle({ signInId }) {
      const message = await deps.signIn.linkMessage(deps.db, signInId);
      if (message) await deps.email.send({ ...message, messageId: `<dashboard-sign-in-${signInId}@signet>` });
    },
  });

/** Sign-in attempts older than a day and sessions ended more than a week ago are deleted. */
export const signInPeriodicTasks = (deps: { signIn: Pick<SignInService, 'purge'> }): PeriodicTask[] => [
  { name: 'purge-dashboard-sign-ins', run: async (tx) => void (await deps.signIn.purge(tx)) },
];
