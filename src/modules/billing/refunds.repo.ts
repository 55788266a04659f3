import { count, desc, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { refunds } from '../../db/schema/index.js';

export type RefundRow = typeof refunds.$inferSelect;

export function createRefundsRepo() {
  return {
    /** Exactly one refund per envelope: a second request is a no-op. Returns the new row, if any. */
    async insert(tx: DbOrTx, r: { envelopeId: string; customerId: string; amountMicros: bigint }): Promise<RefundRow | undefined> {
      const [row] = await tx.insert(refunds).values(r).onConflictDoNothing().returning();
      return row;
    },

    async find(tx: DbOrTx, id: string, lock = false): Promise<RefundRow | undefined> {
      const q = tx.select().from(refunds).where(eq(refunds.id, id));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    async update(tx: DbOrTx, id: string, set: Partial<typeof refunds.$inferInsert>): Promise<void> {
      await tx.update(refunds).set({ ...set, updatedAt: sql`now()` }).where(eq(refunds.id, id));
    },

    async list(tx: DbOrTx, status: RefundRow['status'] | undefined, page: { limit: number; offset: number }) {
      const where = status ? eq(refunds.status, status) : undefined;
      const [rows, [{ total }]] = await Promise.all([
        tx.select().from(refunds).where(where).orderBy(desc(refunds.createdAt)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(refunds).where(where),
      ]);
      return { rows, total };
    },
  };
}

export type RefundsRepo = ReturnType<typeof createRefundsRepo>;
