import type { PeriodicTask } from '../../jobs/worker.js';
import type { AuthService } from './auth.service.js';

/** Expired sign-in nonces are deleted (an hour after expiry), so unanswered challenges do not pile up. */
export const authPeriodicTasks = (deps: { auth: Pick<AuthService, 'purgeExpiredNonces'> }): PeriodicTask[] => [
  { name: 'purge-wallet-nonces', run: async (tx) => void (await deps.auth.purgeExpiredNonces(tx)) },
];
