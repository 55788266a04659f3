import { and, eq, lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { x402Settlements } from '../../db/schema/index.js';

export type SettlementRow = typeof x402Settlements.$inferSelect;

export function createX402Repo() {
  return {
    /** A settlement is recorded once: the same txHash again (a retry of the record) is a no-op. */
    async insertSettlement(tx: DbOrTx, row: Omit<typeof x402Settlements.$inferInsert, 'id' | 'createdAt'>): Promise<SettlementRow | undefined> {
      const [inserted] = await tx.insert(x402Settlements).values(row).onConflictDoNothing().returning();
      return inserted;
    },

    /** The paid call committed: its settlement, recorded on its own beforehand, is now counted. */
    async markCommitted(tx: DbOrTx, txHash: string): Promise<void> {
      await tx.update(x402Settlements).set({ status: 'committed' }).where(eq(x402Settlements.txHash, txHash));
    },

    /** Records the settlement as orphaned, or turns its `settled` row so; undefined when already committed or orphaned. */
    async orphan(tx: DbOrTx, row: Omit<typeof x402Settlements.$inferInsert, 'id' | 'createdAt' | 'status'>): Promise<SettlementRow | undefined> {
      const [orphaned] = await tx
        .insert(x402Settlements)
        .values({ ...row, status: 'orphaned' })
        .onConflictDoUpdate({ target: x402Settlements.txHash, set: { status: 'orphaned' }, setWhere: eq(x402Settlements.status, 'settled') })
        .returning();
      return orphaned;
    },

    /** `settled` rows whose call neither committed nor failed visibly for `olderThanMs`: their process died. */
    async orphanStale(tx: DbOrTx, olderThanMs: number, limit = 100): Promise<SettlementRow[]> {
      const stale = tx
        .select({ id: x402Settlements.id })
        .from(x402Settlements)
        .where(and(eq(x402Settlements.status, 'settled'), lt(x402Settlements.createdAt, sql`now() - (${olderThanMs}::int * interval '1 millisecond')`)))
        .limit(limit)
        .for('update', { skipLocked: true });
      return tx.update(x402Settlements).set({ status: 'orphaned' }).where(sql`${x402Settlements.id} IN ${stale}`).returning();
    },
  };
}

export type X402Repo = ReturnType<typeof createX402Repo>;
