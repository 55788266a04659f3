import { and, eq, lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { x402Settlements } from '../../db/schema/index.js';

export type SettlementRow = typeof x402Settlements.$inferSelect;
type PendingInput = Omit<typeof x402Settlements.$inferInsert, 'id' | 'createdAt' | 'status' | 'txHash'>;

const olderThan = (ms: number) => lt(x402Settlements.createdAt, sql`now() - (${ms}::int * interval '1 millisecond')`);

/**
 * A settlement moves forward only from the state its writer expects (each update is conditional), so a
 * call and the sweep that both reach for one row never both win.
 */
export function createX402Repo() {
  return {
    /**
     * Writes a settlement down as pending before its settle. Undefined when the authorization is on
     * record already, unless it failed there (nothing moved: it may be settled again).
     */
    async insertPending(tx: DbOrTx, row: PendingInput): Promise<SettlementRow | undefined> {
      const fresh = { ...row, status: 'pending' as const, txHash: null, createdAt: sql`now()` };
      const [inserted] = await tx
        .insert(x402Settlements)
        .values({ ...row, status: 'pending' })
        .onConflictDoUpdate({
          target: [x402Settlements.network, x402Settlements.asset, x402Settlements.payer, x402Settlements.nonce],
          set: fresh,
          setWhere: eq(x402Settlements.status, 'failed'),
        })
        .returning();
      return inserted;
    },

    /**
     * pending → `to`, with the transaction when it is known (`pending` again: only the hash was learnt);
     * undefined when the row had moved on. Throws 23505 (unique_violation) for a tx hash already on record.
     */
    async resolvePending(tx: DbOrTx, id: string, to: { status: 'settled' | 'orphaned' | 'failed' | 'unknown' | 'pending'; txHash?: string }): Promise<SettlementRow | undefined> {
      const [row] = await tx
        .update(x402Settlements)
        .set({ status: to.status, ...(to.txHash ? { txHash: to.txHash } : {}) })
        .where(and(eq(x402Settlements.id, id), eq(x402Settlements.status, 'pending')))
        .returning();
      return row;
    },

    /** settled → committed with the paid call's transaction, naming what it bought; undefined when the sweep orphaned it first. */
    async commit(tx: DbOrTx, id: string, envelopeId: string | null): Promise<SettlementRow | undefined> {
      const [row] = await tx
        .update(x402Settlements)
        .set({ status: 'committed', envelopeId })
        .where(and(eq(x402Settlements.id, id), eq(x402Settlements.status, 'settled')))
        .returning();
      return row;
    },

    /** settled → orphaned: its call did not commit, a refund is due; undefined when it was committed or orphaned already. */
    async orphan(tx: DbOrTx, id: string): Promise<SettlementRow | undefined> {
      const [row] = await tx
        .update(x402Settlements)
        .set({ status: 'orphaned' })
        .where(and(eq(x402Settlements.id, id), eq(x402Settlements.status, 'settled')))
        .returning();
      return row;
    },

    /** `settled` rows whose call neither committed nor failed visibly for `olderThanMs`: their process died. */
    async orphanStale(tx: DbOrTx, olderThanMs: number, limit = 100): Promise<SettlementRow[]> {
      const stale = tx
        .select({ id: x402Settlements.id })
        .from(x402Settlements)
        .where(and(eq(x402Settlements.status, 'settled'), olderThan(olderThanMs)))
        .limit(limit)
        .for('update', { skipLocked: true });
      return tx.update(x402Settlements).set({ status: 'orphaned' }).where(sql`${x402Settlements.id} IN ${stale}`).returning();
    },

    /** `pending` rows older than `olderThanMs`: their settle's call has answered (or died) without knowing the outcome. */
    async stalePending(tx: DbOrTx, olderThanMs: number, limit = 100): Promise<SettlementRow[]> {
      return tx
        .select()
        .from(x402Settlements)
        .where(and(eq(x402Settlements.status, 'pending'), olderThan(olderThanMs)))
        .orderBy(x402Settlements.createdAt)
        .limit(limit);
    },
  };
}

export type X402Repo = ReturnType<typeof createX402Repo>;
