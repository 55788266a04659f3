import { z } from 'zod';
import { enqueue } from '../../jobs/queue.js';
import { defineJob, type PeriodicTask } from '../../jobs/worker.js';
import type { X402Service } from './x402.service.js';

export const X402_SETTLEMENT_SWEEP_JOB = 'x402.resolve-settlements';
const SWEEP_EVERY_MS = 5 * 60_000;

/**
 * Settlements left `settled` by a process that died before its call committed become refunds due (in
 * the periodic task's transaction: it reads only the database). Pending ones are resolved on-chain by a
 * job, which reads the chain with no transaction open, one per SWEEP_EVERY_MS across the cluster.
 */
export const x402PeriodicTasks = (deps: { x402: Pick<X402Service, 'orphanStaleSettlements'> }, now: () => number = Date.now): PeriodicTask[] => [
  { name: 'orphan-stale-x402-settlements', run: async (tx) => void (await deps.x402.orphanStaleSettlements(tx)) },
  {
    name: 'queue-x402-settlement-sweep',
    run: (tx) => enqueue(tx, { type: X402_SETTLEMENT_SWEEP_JOB, payload: {}, dedupeKey: `x402-settlement-sweep:${Math.floor(now() / SWEEP_EVERY_MS)}`, maxAttempts: 3 }),
  },
];

export const x402SweepJob = (deps: { x402: Pick<X402Service, 'resolvePendingSettlements'> }) =>
  defineJob({
    type: X402_SETTLEMENT_SWEEP_JOB,
    payload: z.object({}),
    handle: async () => void (await deps.x402.resolvePendingSettlements()),
  });
