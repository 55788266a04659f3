import type { PeriodicTask } from '../../jobs/worker.js';
import type { X402Service } from './x402.service.js';

/** Settlements left `settled` by a process that died before its call committed become refunds due. */
export const x402PeriodicTasks = (deps: { x402: Pick<X402Service, 'orphanStaleSettlements'> }): PeriodicTask[] => [
  { name: 'orphan-stale-x402-settlements', run: async (tx) => void (await deps.x402.orphanStaleSettlements(tx)) },
];
