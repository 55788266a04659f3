import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { complete } from '../../jobs/queue.js';
import { defineJob, type PeriodicTask } from '../../jobs/worker.js';
import type { EnvelopesService } from './envelopes.service.js';
import { CANCEL_JOB, EXPIRE_JOB, PURGE_JOB } from './remote-sweeps.js';

export const DISTRIBUTE_JOB = 'envelope.distribute';

/**
 * PENDING → SENT: the invitations of a send go out after the request committed. The job is marked done
 * by the worker's next claim, which the invitations it queues cause anyway (worker.ts): a completion
 * of its own in the distribution's transaction cost one more statement per envelope (issue 38).
 */
export const distributeJob = (deps: { db: Db; envelopes: Pick<EnvelopesService, 'distribute'> }) =>
  defineJob({
    type: DISTRIBUTE_JOB,
    payload: z.object({ envelopeId: z.guid() }),
    handle: ({ envelopeId }) => deps.envelopes.distribute(deps.db, envelopeId),
  });

/** A remote engine's expiry, purge and cancellation, one envelope per job (remote-sweeps.ts); each ends done with its outcome. */
export const remoteSweepJobs = (deps: { db: Db; envelopes: Pick<EnvelopesService, 'expireOne' | 'purgeOne' | 'cancelOne'> }) => [
  defineJob({
    type: EXPIRE_JOB,
    payload: z.object({ envelopeId: z.guid() }),
    handle: async ({ envelopeId }, ctx) => ((await deps.envelopes.expireOne(deps.db, envelopeId, (tx) => complete(tx, ctx.jobId, ctx.workerId))) ? 'completed' : undefined),
  }),
  defineJob({
    type: PURGE_JOB,
    payload: z.object({ envelopeId: z.guid() }),
    handle: async ({ envelopeId }, ctx) => ((await deps.envelopes.purgeOne(deps.db, envelopeId, (tx) => complete(tx, ctx.jobId, ctx.workerId))) ? 'completed' : undefined),
  }),
  defineJob({
    type: CANCEL_JOB,
    payload: z.object({ envelopeId: z.guid() }),
    handle: async ({ envelopeId }, ctx) => ((await deps.envelopes.cancelOne(deps.db, envelopeId, (tx) => complete(tx, ctx.jobId, ctx.workerId))) ? 'completed' : undefined),
  }),
];

export const envelopePeriodicTasks = (deps: { envelopes: Pick<EnvelopesService, 'expireDue' | 'purgeDue'> }): PeriodicTask[] => [
  { name: 'expire-envelopes', run: async (tx) => void (await deps.envelopes.expireDue(tx)) },
  { name: 'purge-documents', run: async (tx) => void (await deps.envelopes.purgeDue(tx)) },
];

/** The automatic reminders' periodic task and its service (envelope-reminders.ts). */
export { createEnvelopeReminders } from './envelope-reminders.js';
