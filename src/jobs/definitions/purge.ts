import type { IdempotencyRepo } from '../../http/idempotency.repo.js';
import { purgeDone } from '../queue.js';
import type { PeriodicTask } from '../worker.js';

const DONE_JOB_RETENTION_MS = 7 * 24 * 3_600_000;

/** Housekeeping on every scheduler tick: expired idempotency records, and finished jobs past a week. */
export function purgeTasks(deps: { idempotency: IdempotencyRepo }): PeriodicTask[] {
  return [
    { name: 'purge-idempotency-keys', run: async (tx) => void (await deps.idempotency.purgeExpired(tx)) },
    {
      name: 'purge-done-jobs',
      run: async (tx) => void (await purgeDone(tx, new Date(Date.now() - DONE_JOB_RETENTION_MS))),
    },
  ];
}
