import { and, count, desc, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { x402Refunds, x402Settlements } from '../../db/schema/index.js';

export type SettlementRow = typeof x402Settlements.$inferSelect;
export type WalletRefundRow = typeof x402Refunds.$inferSelect;

/** Refunds of x402 payments: records for the operator, who sends them on-chain (Signet holds no key). */
export function createWalletRefundsRepo() {
  return {
    /** The committed settlement that paid for an envelope, if a wallet paid for it. */
    async settlementOfEnvelope(tx: DbOrTx, customerId: string, envelopeId: string): Promise<SettlementRow | undefined> {
      const [row] = await tx
        .select()
        .from(x402Settlements)
        .where(and(eq(x402Settlements.customerId, customerId), eq(x402Settlements.envelopeId, envelopeId), eq(x402Settlements.status, 'committed')))
        .orderBy(desc(x402Settlements.createdAt))
        .limit(1);
      return row;
    },

    /** One refund per settlement: a second request for it is a no-op. */
    async insertRefund(tx: DbOrTx, input: { settlement: SettlementRow & { txHash: string }; reason: string }): Promise<WalletRefundRow | undefined> {
      const s = input.settlement;
      const [row] = await tx
        .insert(x402Refunds)
        .values({ settlementId: s.id, customerId: s.customerId, envelopeId: s.envelopeId, payer: s.payer, amountMicros: s.amountMicros, originalTxHash: s.txHash, reason: input.reason })
        .onConflictDoNothing()
        .returning();
      return row;
    },

    async findRefund(tx: DbOrTx, id: string, lock = false): Promise<WalletRefundRow | undefined> {
      const q = tx.select().from(x402Refunds).where(eq(x402Refunds.id, id));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    async completeRefund(tx: DbOrTx, id: string, refundTxHash: string): Promise<WalletRefundRow | undefined> {
      const [row] = await tx
        .update(x402Refunds)
        .set({ status: 'completed', refundTxHash, completedAt: sql`now()` })
        .where(and(eq(x402Refunds.id, id), eq(x402Refunds.status, 'pending')))
        .returning();
      return row;
    },

    async listRefunds(tx: DbOrTx, status: WalletRefundRow['status'] | undefined, page: { limit: number; offset: number }) {
      const where = status ? eq(x402Refunds.status, status) : undefined;
      const [rows, [{ total }]] = await Promise.all([
        tx.select().from(x402Refunds).where(where).orderBy(desc(x402Refunds.createdAt)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(x402Refunds).where(where),
      ]);
      return { rows, total };
    },
  };
}

export type WalletRefundsRepo = ReturnType<typeof createWalletRefundsRepo>;
