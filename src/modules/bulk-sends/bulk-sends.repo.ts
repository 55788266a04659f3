import { and, asc, count, desc, eq, inArray, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { bulkSendRows, bulkSends } from '../../db/schema/index.js';
import type { Owner } from '../envelopes/envelopes.repo.js';

export type BulkSendRow = typeof bulkSends.$inferSelect;
export type BulkRowRow = typeof bulkSendRows.$inferSelect;
export type RowCounts = Record<BulkRowRow['status'], number>;
export type ClaimedRow = { index: number; input: Record<string, unknown> };

const owned = (id: string, o: Owner) => and(eq(bulkSends.id, id), eq(bulkSends.customerId, o.customerId), eq(bulkSends.mode, o.mode));
const row = (bulkSendId: string, index: number) => and(eq(bulkSendRows.bulkSendId, bulkSendId), eq(bulkSendRows.index, index));
const heldBy = (bulkSendId: string, index: number, workerId: string) => and(row(bulkSendId, index), eq(bulkSendRows.status, 'CLAIMED'), eq(bulkSendRows.claimedBy, workerId));
const emptyCounts = (): RowCounts => ({ REFUSED: 0, PENDING: 0, CLAIMED: 0, CREATED: 0, FAILED: 0, SKIPPED: 0 });
const INSERT_CHUNK = 500;

export function createBulkSendsRepo() {
  return {
    /** The bulk send and all its rows (refused ones included), in the request's transaction. */
    async insert(tx: DbOrTx, bulk: typeof bulkSends.$inferInsert, rows: (typeof bulkSendRows.$inferInsert)[]): Promise<BulkSendRow> {
      const [created] = await tx.insert(bulkSends).values(bulk).returning();
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) await tx.insert(bulkSendRows).values(rows.slice(i, i + INSERT_CHUNK));
      return created;
    },

    async find(db: DbOrTx, id: string, owner: Owner, lock = false): Promise<BulkSendRow | undefined> {
      const q = db.select().from(bulkSends).where(owned(id, owner));
      const [found] = lock ? await q.for('update') : await q;
      return found;
    },

    async findById(db: DbOrTx, id: string): Promise<BulkSendRow | undefined> {
      const [found] = await db.select().from(bulkSends).where(eq(bulkSends.id, id));
      return found;
    },

    async list(db: DbOrTx, owner: Owner, page: { limit: number; offset: number }): Promise<{ rows: BulkSendRow[]; total: number }> {
      const where = and(eq(bulkSends.customerId, owner.customerId), eq(bulkSends.mode, owner.mode));
      const [rows, [{ total }]] = await Promise.all([
        db.select().from(bulkSends).where(where).orderBy(desc(bulkSends.createdAt), desc(bulkSends.id)).limit(page.limit).offset(page.offset),
        db.select({ total: count() }).from(bulkSends).where(where),
      ]);
      return { rows, total };
    },

    /** Each bulk send's rows by status. */
    async counts(db: DbOrTx, ids: string[]): Promise<Map<string, RowCounts>> {
      const out = new Map(ids.map((id) => [id, emptyCounts()]));
      if (ids.length === 0) return out;
      const rows = await db
        .select({ id: bulkSendRows.bulkSendId, status: bulkSendRows.status, n: count() })
        .from(bulkSendRows)
        .where(inArray(bulkSendRows.bulkSendId, ids))
        .groupBy(bulkSendRows.bulkSendId, bulkSendRows.status);
      for (const r of rows) out.get(r.id)![r.status] = Number(r.n);
      return out;
    },

    async rows(db: DbOrTx, id: string, page: { limit: number; offset: number }): Promise<BulkRowRow[]> {
      if (page.limit === 0) return [];
      return db.select().from(bulkSendRows).where(eq(bulkSendRows.bulkSendId, id)).orderBy(asc(bulkSendRows.index)).limit(page.limit).offset(page.offset);
    },

    /**
     * Claims up to `limit` rows for `workerId`, lowest index first: pending rows, and claimed rows whose
     * lease lapsed (their worker died). SKIP LOCKED: workers racing on one bulk send take different rows.
     * A claim promises nothing by itself: the row is created only by markCreated's conditional update.
     */
    async claim(db: DbOrTx, id: string, workerId: string, limit: number, leaseMs: number): Promise<ClaimedRow[]> {
      const claimed = await db
        .update(bulkSendRows)
        .set({ status: 'CLAIMED', claimedBy: workerId, claimedUntil: sql`now() + (${leaseMs}::int * interval '1 millisecond')`, updatedAt: sql`now()` })
        .where(
          and(
            eq(bulkSendRows.bulkSendId, id),
            sql`${bulkSendRows.index} IN (
              SELECT "index" FROM bulk_send_rows
              WHERE bulk_send_id = ${id} AND (status = 'PENDING' OR (status = 'CLAIMED' AND claimed_until < now()))
              ORDER BY "index" LIMIT ${limit} FOR UPDATE SKIP LOCKED)`,
          ),
        )
        .returning({ index: bulkSendRows.index, input: bulkSendRows.input });
      return claimed.map((r) => ({ index: r.index, input: r.input ?? {} })).sort((a, b) => a.index - b.index);
    },

    /** In the envelope's transaction: true exactly once per row, and only while `workerId` holds it (not cancelled, not taken over). */
    async markCreated(tx: DbOrTx, id: string, index: number, workerId: string, envelopeId: string): Promise<boolean> {
      const done = await tx
        .update(bulkSendRows)
        .set({ status: 'CREATED', envelopeId, claimedBy: null, claimedUntil: null, updatedAt: sql`now()` })
        .where(heldBy(id, index, workerId))
        .returning({ index: bulkSendRows.index });
      return done.length === 1;
    },

    async markFailed(db: DbOrTx, id: string, index: number, workerId: string, error: { code: string; message: string }): Promise<void> {
      await db
        .update(bulkSendRows)
        .set({ status: 'FAILED', errorCode: error.code, errorMessage: error.message.slice(0, 1000), claimedBy: null, claimedUntil: null, updatedAt: sql`now()` })
        .where(heldBy(id, index, workerId));
    },

    /** Gives a row back (its creation hit an error a retry may not): pending again, for any worker. */
    async release(db: DbOrTx, id: string, index: number, workerId: string): Promise<void> {
      await db.update(bulkSendRows).set({ status: 'PENDING', claimedBy: null, claimedUntil: null, updatedAt: sql`now()` }).where(heldBy(id, index, workerId));
    },

    async start(db: DbOrTx, id: string): Promise<void> {
      await db.update(bulkSends).set({ status: 'RUNNING', updatedAt: sql`now()` }).where(and(eq(bulkSends.id, id), eq(bulkSends.status, 'QUEUED')));
    },

    /** QUEUED/RUNNING → COMPLETED once no row is left to create; answers the row when this call moved it (once, whoever races). */
    async complete(tx: DbOrTx, id: string): Promise<BulkSendRow | undefined> {
      const [moved] = await tx
        .update(bulkSends)
        .set({ status: 'COMPLETED', endedAt: sql`now()`, updatedAt: sql`now()` })
        .where(
          and(
            eq(bulkSends.id, id),
            inArray(bulkSends.status, ['QUEUED', 'RUNNING']),
            sql`NOT EXISTS (SELECT 1 FROM bulk_send_rows WHERE bulk_send_id = ${id} AND status IN ('PENDING', 'CLAIMED'))`,
          ),
        )
        .returning();
      return moved;
    },

    /** Under the bulk send's lock (find with lock): CANCELLED, and every row not created yet SKIPPED. */
    async cancel(tx: DbOrTx, id: string): Promise<void> {
      await tx.update(bulkSends).set({ status: 'CANCELLED', endedAt: sql`now()`, updatedAt: sql`now()` }).where(eq(bulkSends.id, id));
      await tx
        .update(bulkSendRows)
        .set({ status: 'SKIPPED', claimedBy: null, claimedUntil: null, updatedAt: sql`now()` })
        .where(and(eq(bulkSendRows.bulkSendId, id), or(eq(bulkSendRows.status, 'PENDING'), eq(bulkSendRows.status, 'CLAIMED'))));
    },
  };
}

export type BulkSendsRepo = ReturnType<typeof createBulkSendsRepo>;
