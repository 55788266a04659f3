import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { defineJob } from '../../jobs/worker.js';
import type { RefundsService } from './refunds.service.js';

// The type string predates the refunds' move into billing; queued rows carry it.
export const REFUND_JOB = 'envelope.refund';

/** Credits a refund exactly once; each failure is recorded, the last one raises an operator alert. */
export const refundJob = (deps: { db: Db; refunds: Pick<RefundsService, 'run' | 'recordFailure'> }) =>
  defineJob({
    type: REFUND_JOB,
    payload: z.object({ refundId: z.guid() }),
    // Its last failure raises refund_failed (below); a crash or a bad payload still gets the worker's job alert.
    raisesOwnFailureAlert: true,
    async handle({ refundId }, ctx) {
      try {
        await deps.db.transaction((tx) => deps.refunds.run(tx, refundId));
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        await deps.db.transaction((tx) => deps.refunds.recordFailure(tx, refundId, message, ctx.attempt >= ctx.maxAttempts));
        throw err;
      }
    },
  });
