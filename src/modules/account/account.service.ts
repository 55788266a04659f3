import type { DbOrTx } from '../../db/client.js';
import type { Actor, Paging } from '../../context.js';
import { AppError } from '../../errors.js';
import { formatDollars, microsToCents } from '../../lib/money.js';
import type { BillingRepo } from '../billing/billing.repo.js';
import type { AccountRepo, CustomerRow } from './account.repo.js';
import type { SummaryRepo } from './summary.repo.js';
import type { TAccount, TUsageEntry } from './account.schemas.js';

export function createAccountService(deps: { accounts: AccountRepo; billing: BillingRepo; summary: Pick<SummaryRepo, 'totalSpent'> }) {
  return {
    /**
     * The customer a wallet signs in as, made on its first sign-in. A wallet has no email or name of its
     * own: the name is the address and the email a synthetic, undeliverable `<address>@wallet.invalid`
     * (RFC 2606 reserves .invalid), so nothing is ever mailed to it.
     */
    async ensureWalletCustomer(tx: DbOrTx, input: { walletAddress: string; sandboxLimit: number }): Promise<{ customer: CustomerRow; created: boolean }> {
      return deps.accounts.ensureWalletCustomer(tx, { ...input, email: `${input.walletAddress}@wallet.invalid`, name: input.walletAddress });
    },

    async getAccount(db: DbOrTx, actor: Actor): Promise<TAccount> {
      const customer = await deps.accounts.findCustomer(db, actor.customerId);
      if (!customer) throw new AppError('UNAUTHORIZED', 'The credential no longer resolves to a customer');
      // Wallet callers see their spending; the query is skipped on the API-key hot path.
      const spent = actor.via === 'wallet_jwt' ? await deps.summary.totalSpent(db, customer.id) : null;
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
        walletAddress: customer.walletAddress,
        totalSpentCents: spent === null ? null : microsToCents(spent),
        totalSpentFormatted: spent === null ? null : formatDollars(spent),
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
