import type { PeriodicTask } from '../../jobs/worker.js';
import type { TopUpsService } from './top-ups.service.js';

/** Pending card top-ups that never reached Stripe, or that Stripe never settled, are marked expired. */
export const topUpPeriodicTasks = (deps: { topUps: Pick<TopUpsService, 'expireStale'> }): PeriodicTask[] => [
  { name: 'expire-card-top-ups', run: async (tx) => void (await deps.topUps.expireStale(tx)) },
];
