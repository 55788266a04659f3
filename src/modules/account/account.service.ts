import type { DbOrTx } from '../../db/client.js';
import type { Actor } from '../../http/context.js';
import { AppError } from '../../http/errors.js';
import type { Paging } from '../../http/paging.js';
import { formatDollars, microsToCents } from '../../lib/money.js';
import type { BillingRepo } from '../billing/billing.repo.js';
import type { AccountRepo } from './account.repo.js';
import type { TAccount, TUsageEntry } from './account.schemas.js';

export function createAccountService(deps: { accounts: AccountRepo; billing: BillingRepo }) {
  return {
    async getAccount(db: DbOrTx, actor: Actor): Promise<TAccount> {
      const customer = await deps.accounts.findCustomer(db, actor.customerId);
      if (!customer) throw new AppError('UNAUTHORIZED', 'The credential no longer resolves to a customer');
      return {
        accountId: customer.id,
        email: customer.email,
        name: customer.name,
        apiKeyPrefix: actor.keyPrefix ?? null,
        mode: actor.mode,
        creditsCents: microsToCents(customer.balanceMicros),
        creditsFormatted: formatDollars(customer.balanceMicros),
        balanceMicros: Number(customer.balanceMicros),
        sandboxUsed: customer.sandboxUsed,
        sandboxLimit: customer.sandboxLimit,
        createdAt: customer.createdAt.toISOString(),
      };
    },

    /**
     * The money ledger, newest first. Test-mode calls are never charged and leave no ledger rows, so a
     * test key sees an empty history: test credentials never read live data.
     */
    async listUsage(db: DbOrTx, actor: Actor, paging: Paging): Promise<{ rows: TUsageEntry[]; total: number }> {
      if (actor.mode === 'test') return { rows: [], total: 0 };
      const { rows, total } = await deps.billing.listLedger(db, actor.customerId, paging);
      return {
        total,
        rows: rows.map((r) => ({
          id: r.id,
          direction: r.direction,
          amountCents: microsToCents(r.amountMicros),
          amountFormatted: formatDollars(r.amountMicros),
          amountMicros: Number(r.amountMicros),
          description: r.description,
          envelopeId: r.envelopeId,
          envelopeTitle: r.envelopeTitle,
          txHash: r.txHash,
          createdAt: r.createdAt.toISOString(),
        })),
      };
    },
  };
}

export type AccountService = ReturnType<typeof createAccountService>;
