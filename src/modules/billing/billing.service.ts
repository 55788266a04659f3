import type { DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { Actor } from '../../context.js';
import { formatUsd } from '../../lib/money.js';
import type { BillingRepo, LedgerRow, Standing } from './billing.repo.js';
import { PRICES, type BillableOperation } from '../../lib/prices.js';
import type { Metrics } from '../ops/metrics.js';

export type ChargeInput = {
  actor: Actor;
  operation: BillableOperation;
  /** X-Service-Test-Mode: true; test keys are sandboxed whatever this says. */
  testModeHeader: boolean;
  envelopeId?: string | null;
  envelopeTitle?: string | null;
  description?: string;
};

/**
 * `ledgerEntryId` is the ledger row of a debit from the balance. An x402 call has none yet: its row, with
 * the txHash, is written last in the transaction (the payment settled before it opened).
 */
export type ChargeResult = { sandbox: true } | { sandbox: false; amountMicros: bigint; ledgerEntryId: string | null };

export function createBillingService(deps: { repo: BillingRepo; topUpUrl: string; db: DbOrTx; metrics: Pick<Metrics, 'charge'> }) {
  const { repo } = deps;
  const sandboxed = (input: Pick<ChargeInput, 'actor' | 'testModeHeader'>) => input.actor.mode === 'test' || input.testModeHeader;
  const sandboxUsedUp = () => new AppError('SANDBOX_LIMIT_REACHED', 'The free test-mode allowance is used up', { retryable: false });
  const insufficient = (balance: bigint, price: bigint) =>
    new AppError('INSUFFICIENT_BALANCE', `Balance USD ${formatUsd(balance)} is below the price USD ${formatUsd(price)}`, {
      priceUsd: formatUsd(price),
      priceMicros: Number(price),
      balanceUsd: formatUsd(balance),
      balanceMicros: Number(balance),
      topUpUrl: deps.topUpUrl,
      retryable: false,
    });

  return {
    /**
     * The cheap refusal before any parsing or storing (DESIGN §4.12): answers the 402 that `charge`
     * would, from one unlocked read. Passing it promises nothing: the charge in the transaction decides.
     * Answers what it read (with the account's name), or undefined when it read nothing (an x402 payer).
     */
    async assertAffordable(input: Pick<ChargeInput, 'actor' | 'operation' | 'testModeHeader'> & { also?: BillableOperation[] }): Promise<Standing | undefined> {
      // An x402 payer pays on-chain; the facilitator's verify is its affordability check.
      if (input.actor.payment) return undefined;
      const standing = await repo.standing(deps.db, input.actor.customerId);
      if (!standing) return undefined; // the charge reports it
      // `also`: the other charges the same call makes (a gated recipient's verification), refused together.
      const operations = [input.operation, ...(input.also ?? [])];
      if (sandboxed(input)) {
        if (standing.sandboxLeft < operations.length) throw sandboxUsedUp();
        return standing;
      }
      const price = operations.reduce((sum, op) => sum + PRICES[op].micros, 0n);
      if (standing.balance < price) throw insufficient(standing.balance, price);
      return standing;
    },

    /**
     * Charges one billable call inside the caller's transaction, so the charge commits or rolls back
     * with the resource it pays for. Test mode counts against the sandbox allowance instead.
     */
    /**
     * What `charge` will take for this call, without charging: a create writes it on its envelope
     * (the refund's amount) in the same statement as the row, and charges last.
     */
    quote(input: Pick<ChargeInput, 'actor' | 'operation' | 'testModeHeader'>): { sandbox: boolean; amountMicros: bigint } {
      if (input.actor.payment) return { sandbox: false, amountMicros: input.actor.payment.priceMicros };
      if (sandboxed(input)) return { sandbox: true, amountMicros: 0n };
      return { sandbox: false, amountMicros: PRICES[input.operation].micros };
    },

    async charge(tx: Tx, input: ChargeInput): Promise<ChargeResult> {
      const { actor, operation } = input;
      const price = PRICES[operation];
      // A paying wallet pays the price it signed for (x402 refuses X-Service-Test-Mode): the settlement is the charge.
      if (actor.payment) {
        actor.payment.describe({ operation, description: input.description ?? price.label, envelopeId: input.envelopeId ?? null, envelopeTitle: input.envelopeTitle ?? null });
        deps.metrics.charge('x402', operation);
        return { sandbox: false, amountMicros: actor.payment.priceMicros, ledgerEntryId: null };
      }
      if (sandboxed(input)) {
        if (!(await repo.useSandbox(tx, actor.customerId))) throw sandboxUsedUp();
        deps.metrics.charge('sandbox', operation);
        return { sandbox: true };
      }
      const entry = await repo.debitWithEntry(tx, {
        customerId: actor.customerId,
        amountMicros: price.micros,
        operation,
        envelopeId: input.envelopeId ?? null,
        envelopeTitle: input.envelopeTitle ?? null,
        description: input.description ?? price.label,
      });
      if (!entry) throw insufficient(await repo.balance(tx, actor.customerId), price.micros);
      deps.metrics.charge('balance', operation);
      return { sandbox: false, amountMicros: price.micros, ledgerEntryId: entry.id };
    },

    /**
     * The ledger row of a settled x402 payment, in the paid call's transaction: a debit paid on-chain,
     * so the balance does not move (balanceAfter is the balance as it stands). Also its refund, once sent.
     */
    async recordPayment(
      tx: Tx,
      input: {
        customerId: string;
        micros: bigint;
        txHash: string;
        /** `refund`: a payment sent back on-chain by the operator (spending goes down, the balance does not move). */
        direction?: 'debit' | 'refund';
        operation: string | null;
        description: string;
        envelopeId: string | null;
        envelopeTitle: string | null;
      },
    ): Promise<LedgerRow> {
      return repo.insertLedger(tx, {
        customerId: input.customerId,
        direction: input.direction ?? 'debit',
        amountMicros: input.micros,
        balanceAfterMicros: await repo.balance(tx, input.customerId),
        operation: input.operation,
        envelopeId: input.envelopeId,
        envelopeTitle: input.envelopeTitle,
        description: input.description,
        txHash: input.txHash,
      });
    },

    /** The prepaid balance as it stands (unlocked read). */
    async balanceOf(customerId: string, db: DbOrTx = deps.db): Promise<bigint> {
      return repo.balance(db, customerId);
    },

    /**
     * Takes money back that was credited (a card top-up refunded or disputed): as much of `micros` as
     * the balance holds, never below zero, with its ledger row. Answers what was taken.
     */
    async takeBack(tx: Tx, input: { customerId: string; micros: bigint; description: string }): Promise<{ takenMicros: bigint; ledgerEntryId: string | null }> {
      const { takenMicros, entryId } = await repo.reverseUpTo(tx, { customerId: input.customerId, maxMicros: input.micros, description: input.description });
      return { takenMicros, ledgerEntryId: entryId };
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
