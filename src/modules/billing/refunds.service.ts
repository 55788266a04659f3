import type { OperatorContext, Paging } from '../../context.js';
import type { Tx, DbOrTx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { enqueue } from '../../jobs/queue.js';
import type { AuditService } from '../audit/audit.service.js';
import type { Metrics } from '../ops/metrics.js';
import { REFUND_JOB } from './billing.jobs.js';
import type { BillingService } from './billing.service.js';
import type { RefundRow, RefundsRepo } from './refunds.repo.js';
import type { SettlementRow, WalletRefundRow, WalletRefundsRepo } from './wallet-refunds.repo.js';

const REFUND_ATTEMPTS = 5;

/**
 * Charges given back when an envelope ends without completing. A refund is a row (one per envelope,
 * so it happens at most once) and a job that credits it; a failure is recorded, the last one alerted.
 */
export function createRefundsService(deps: {
  repo: RefundsRepo;
  wallet: WalletRefundsRepo;
  billing: Pick<BillingService, 'credit' | 'recordPayment'>;
  audit: Pick<AuditService, 'operator' | 'alert'>;
  metrics: Pick<Metrics, 'refund'>;
}) {
  const { repo } = deps;
  const dto = (r: RefundRow) => ({ kind: 'balance' as const, ...r, amountMicros: Number(r.amountMicros), createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString() });
  const walletDto = (r: WalletRefundRow) => ({
    kind: 'wallet' as const,
    ...r,
    amountMicros: Number(r.amountMicros),
    createdAt: r.createdAt.toISOString(),
    completedAt: r.completedAt?.toISOString() ?? null,
  });

  /**
   * An x402 payment to give back. Signet holds no private key and sends nothing on-chain: the record
   * and an alert tell the operator, who sends it and records its hash (completeWallet).
   */
  async function walletRefund(tx: Tx, settlement: SettlementRow, reason: string): Promise<void> {
    const { txHash } = settlement;
    // Only a transfer known on-chain is given back: a settlement still without one is the sweep's to resolve.
    if (!txHash) throw new Error(`x402 settlement ${settlement.id} has no transaction to refund`);
    const refund = await deps.wallet.insertRefund(tx, { settlement: { ...settlement, txHash }, reason });
    if (!refund) return;
    deps.metrics.refund('wallet', 'requested');
    await deps.audit.alert(tx, {
      kind: 'x402_refund_required',
      message: `Send ${settlement.amountMicros} micros of ${settlement.asset} back to ${settlement.payer} (paid in ${settlement.txHash}): ${reason}`,
      customerId: settlement.customerId,
      resourceType: 'x402_refund',
      resourceId: refund.id,
    });
  }

  return {
    /** Called in the transaction that ends the envelope; a second request for the same envelope is a no-op. */
    async request(tx: Tx, envelope: { id: string; customerId: string; chargedMicros: bigint }): Promise<void> {
      if (envelope.chargedMicros <= 0n) return;
      // Paid on-chain by a wallet: the money goes back to the wallet, not to a balance it never used.
      const settlement = await deps.wallet.settlementOfEnvelope(tx, envelope.customerId, envelope.id);
      if (settlement) return walletRefund(tx, settlement, 'envelope ended without completing');
      const refund = await repo.insert(tx, { envelopeId: envelope.id, customerId: envelope.customerId, amountMicros: envelope.chargedMicros });
      if (!refund) return;
      await enqueue(tx, { type: REFUND_JOB, payload: { refundId: refund.id }, maxAttempts: REFUND_ATTEMPTS });
      deps.metrics.refund('balance', 'requested');
    },

    /** The refund job: credits the charge back exactly once. */
    async run(tx: Tx, refundId: string): Promise<void> {
      const refund = await repo.find(tx, refundId, true);
      if (!refund || refund.status === 'succeeded') return;
      const { entry } = await deps.billing.credit(tx, { customerId: refund.customerId, micros: refund.amountMicros, direction: 'refund', description: 'Refund: envelope ended without completing', envelopeId: refund.envelopeId });
      await repo.update(tx, refund.id, { status: 'succeeded', attempts: refund.attempts + 1, ledgerEntryId: entry.id, lastError: null });
      deps.metrics.refund('balance', 'succeeded');
    },

    async recordFailure(tx: Tx, refundId: string, error: string, final: boolean): Promise<void> {
      const refund = await repo.find(tx, refundId, true);
      if (!refund || refund.status === 'succeeded') return;
      await repo.update(tx, refund.id, { attempts: refund.attempts + 1, lastError: error.slice(0, 500), status: final ? 'failed' : 'pending' });
      if (final) {
        deps.metrics.refund('balance', 'failed');
        await deps.audit.alert(tx, { kind: 'refund_failed', message: `Refund ${refund.id} for envelope ${refund.envelopeId} failed: ${error.slice(0, 200)}`, customerId: refund.customerId, resourceType: 'refund', resourceId: refund.id });
      }
    },

    /** Operator: queues a refund that has not succeeded once more; a succeeded one is left as it is. */
    async retry(tx: Tx, op: OperatorContext, refundId: string) {
      const refund = await repo.find(tx, refundId, true);
      if (!refund) throw new AppError('NOT_FOUND', 'No such refund');
      if (refund.status !== 'succeeded') {
        await repo.update(tx, refund.id, { status: 'pending' });
        await enqueue(tx, { type: REFUND_JOB, payload: { refundId: refund.id }, maxAttempts: REFUND_ATTEMPTS });
      }
      await deps.audit.operator(tx, op, { customerId: refund.customerId, action: 'refund.retry', resourceType: 'refund', resourceId: refund.id });
      return { refundId: refund.id, status: refund.status === 'succeeded' ? 'succeeded' : 'pending' };
    },

    walletRefund,

    /** Operator: the wallet refund was sent on-chain in `txHash`; a completed one is not completed again. */
    async completeWallet(tx: Tx, op: OperatorContext, refundId: string, txHash: string) {
      const refund = await deps.wallet.findRefund(tx, refundId, true);
      if (!refund) throw new AppError('NOT_FOUND', 'No such wallet refund');
      if (refund.status === 'completed') throw new AppError('REFUND_ALREADY_COMPLETED', 'This refund was completed already', { refundTxHash: refund.refundTxHash });
      const done = (await deps.wallet.completeRefund(tx, refund.id, txHash))!;
      deps.metrics.refund('wallet', 'completed');
      // The wallet's history shows the money back, with the hash the operator sent it in.
      await deps.billing.recordPayment(tx, {
        customerId: refund.customerId,
        micros: refund.amountMicros,
        txHash,
        direction: 'refund',
        operation: null,
        description: `Refund sent on-chain to ${refund.payer}`,
        envelopeId: refund.envelopeId,
        envelopeTitle: null,
      });
      await deps.audit.operator(tx, op, { customerId: refund.customerId, action: 'refund.complete', resourceType: 'x402_refund', resourceId: refund.id, metadata: { txHash } });
      return walletDto(done);
    },

    /**
     * Operator: every customer's refunds, newest first: balance refunds and wallet refunds together
     * (`kind` tells them apart). `completed` is a wallet refund's end; the others are balance refunds'.
     */
    async list(db: DbOrTx, status: RefundRow['status'] | WalletRefundRow['status'] | undefined, paging: Paging) {
      const window = { limit: paging.offset + paging.limit, offset: 0 };
      const [balance, wallet] = await Promise.all([
        status === 'completed' ? { rows: [], total: 0 } : repo.list(db, status, window),
        status === 'succeeded' || status === 'failed' ? { rows: [], total: 0 } : deps.wallet.listRefunds(db, status, window),
      ]);
      const rows = [...balance.rows.map(dto), ...wallet.rows.map(walletDto)]
        .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
        .slice(paging.offset, paging.offset + paging.limit);
      return { rows, total: balance.total + wallet.total };
    },
  };
}

export type RefundsService = ReturnType<typeof createRefundsService>;
