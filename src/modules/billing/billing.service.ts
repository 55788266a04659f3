import type { Tx } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import type { Actor } from '../../http/context.js';
import { formatUsd } from '../../lib/money.js';
import type { BillingRepo, LedgerRow } from './billing.repo.js';
import { PRICES, type BillableOperation } from './prices.js';

export type ChargeInput = {
  actor: Actor;
  operation: BillableOperation;
  /** X-Service-Test-Mode: true; test keys are sandboxed whatever this says. */
  testModeHeader: boolean;
  envelopeId?: string | null;
  envelopeTitle?: string | null;
  description?: string;
};

export type ChargeResult = { sandbox: true } | { sandbox: false; entry: LedgerRow };

export function createBillingService(deps: { repo: BillingRepo; topUpUrl: string }) {
  const { repo } = deps;
  return {
    /**
     * Charges one billable call inside the caller's transaction, so the charge commits or rolls back
     * with the resource it pays for. Test mode counts against the sandbox allowance instead.
     */
    async charge(tx: Tx, input: ChargeInput): Promise<ChargeResult> {
      const { actor, operation } = input;
      const price = PRICES[operation];
      if (actor.mode === 'test' || input.testModeHeader) {
        if (!(await repo.useSandbox(tx, actor.customerId))) {
          throw new AppError('SANDBOX_LIMIT_REACHED', 'The free test-mode allowance is used up', { retryable: false });
        }
        return { sandbox: true };
      }
      const after = await repo.debit(tx, actor.customerId, price.micros);
      if (after === undefined) {
        const balance = await repo.balance(tx, actor.customerId);
        throw new AppError('INSUFFICIENT_BALANCE', `Balance USD ${formatUsd(balance)} is below the price USD ${formatUsd(price.micros)}`, {
          priceUsd: formatUsd(price.micros),
          priceMicros: Number(price.micros),
          balanceUsd: formatUsd(balance),
          balanceMicros: Number(balance),
          topUpUrl: deps.topUpUrl,
          retryable: false,
        });
      }
      const entry = await repo.insertLedger(tx, {
        customerId: actor.customerId,
        direction: 'debit',
        amountMicros: price.micros,
        balanceAfterMicros: after,
        operation,
        envelopeId: input.envelopeId ?? null,
        envelopeTitle: input.envelopeTitle ?? null,
        description: input.description ?? price.label,
        txHash: null,
      });
      return { sandbox: false, entry };
    },

    /** Adds money (a top-up, an operator grant, or a refund) with its ledger row. */
    async credit(
      tx: Tx,
      input: { customerId: string; micros: bigint; direction: 'credit' | 'refund'; description: string; envelopeId?: string | null; txHash?: string | null },
    ): Promise<{ balanceMicros: bigint; entry: LedgerRow }> {
      if (input.micros <= 0n) throw new AppError('VALIDATION_ERROR', 'The amount must be positive', { details: [{ path: 'body.amountCents', message: 'must be positive' }] });
      const after = await repo.credit(tx, input.customerId, input.micros);
      if (after === undefined) throw new AppError('CUSTOMER_NOT_FOUND', 'No such customer');
      const entry = await repo.insertLedger(tx, {
        customerId: input.customerId,
        direction: input.direction,
        amountMicros: input.micros,
        balanceAfterMicros: after,
        envelopeId: input.envelopeId ?? null,
        description: input.description,
        txHash: input.txHash ?? null,
      });
      return { balanceMicros: after, entry };
    },
  };
}

export type BillingService = ReturnType<typeof createBillingService>;
