import { and, asc, count, desc, eq, inArray, isNull, lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { envelopeEvents, envelopeFields, envelopeRecipients, envelopes } from '../../db/schema/index.js';

export type EnvelopeRow = typeof envelopes.$inferSelect;
export type StoredRecipientRow = typeof envelopeRecipients.$inferSelect;
export type StoredFieldRow = typeof envelopeFields.$inferSelect;
export type EventRow = typeof envelopeEvents.$inferSelect;

export type Owner = { customerId: string; mode: 'live' | 'test' };

const owned = (id: string, o: Owner) => and(eq(envelopes.id, id), eq(envelopes.customerId, o.customerId), eq(envelopes.mode, o.mode));

export function createEnvelopesRepo() {
  return {
    async insert(tx: DbOrTx, row: typeof envelopes.$inferInsert): Promise<EnvelopeRow> {
      const [r] = await tx.insert(envelopes).values(row).returning();
      return r;
    },

    /** Scoped by owner inside the query; `lock` serializes every state change of one envelope. */
    async find(tx: DbOrTx, id: string, owner: Owner, lock = false): Promise<EnvelopeRow | undefined> {
      const q = tx.select().from(envelopes).where(owned(id, owner));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    async findByEngineId(tx: DbOrTx, engineEnvelopeId: string, lock = false): Promise<EnvelopeRow | undefined> {
      const q = tx.select().from(envelopes).where(eq(envelopes.engineEnvelopeId, engineEnvelopeId));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    async findById(tx: DbOrTx, id: string, lock = false): Promise<EnvelopeRow | undefined> {
      const q = tx.select().from(envelopes).where(eq(envelopes.id, id));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    async update(tx: DbOrTx, id: string, set: Partial<typeof envelopes.$inferInsert>): Promise<void> {
      await tx.update(envelopes).set({ ...set, updatedAt: sql`now()` }).where(eq(envelopes.id, id));
    },

    async list(tx: DbOrTx, owner: Owner, filter: { status?: string }, page: { limit: number; offset: number }) {
      const where = and(eq(envelopes.customerId, owner.customerId), eq(envelopes.mode, owner.mode), filter.status ? eq(envelopes.status, filter.status) : undefined);
      const [rows, [{ total }]] = await Promise.all([
        tx.select().from(envelopes).where(where).orderBy(desc(envelopes.createdAt), desc(envelopes.id)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(envelopes).where(where),
      ]);
      return { rows, total };
    },

    /** One statement; the rows as written, by position. */
    async insertRecipients(tx: DbOrTx, rows: (typeof envelopeRecipients.$inferInsert)[]): Promise<StoredRecipientRow[]> {
      if (rows.length === 0) return [];
      const inserted = await tx.insert(envelopeRecipients).values(rows).returning();
      return inserted.sort((a, b) => a.position - b.position);
    },

    async recipients(tx: DbOrTx, envelopeIds: string[]): Promise<StoredRecipientRow[]> {
      if (envelopeIds.length === 0) return [];
      return tx.select().from(envelopeRecipients).where(inArray(envelopeRecipients.envelopeId, envelopeIds)).orderBy(asc(envelopeRecipients.position));
    },

    async updateRecipient(tx: DbOrTx, id: number, set: Partial<typeof envelopeRecipients.$inferInsert>): Promise<void> {
      await tx.update(envelopeRecipients).set(set).where(eq(envelopeRecipients.id, id));
    },

    async insertFields(tx: DbOrTx, rows: (typeof envelopeFields.$inferInsert)[]): Promise<StoredFieldRow[]> {
      if (rows.length === 0) return [];
      return tx.insert(envelopeFields).values(rows).returning();
    },

    async fields(tx: DbOrTx, envelopeIds: string[]): Promise<StoredFieldRow[]> {
      if (envelopeIds.length === 0) return [];
      return tx.select().from(envelopeFields).where(inArray(envelopeFields.envelopeId, envelopeIds)).orderBy(asc(envelopeFields.id));
    },

    async deleteField(tx: DbOrTx, envelopeId: string, engineFieldId: number): Promise<void> {
      await tx.delete(envelopeFields).where(and(eq(envelopeFields.envelopeId, envelopeId), eq(envelopeFields.engineFieldId, engineFieldId)));
    },

    async insertEvent(tx: DbOrTx, e: { envelopeId: string; eventType: string; recipientEmail?: string | null }): Promise<EventRow> {
      const [row] = await tx.insert(envelopeEvents).values(e).returning();
      return row;
    },

    async events(tx: DbOrTx, envelopeId: string): Promise<EventRow[]> {
      return tx.select().from(envelopeEvents).where(eq(envelopeEvents.envelopeId, envelopeId)).orderBy(asc(envelopeEvents.id));
    },

    /** Non-terminal envelopes whose signing window closed, the longest overdue first. */
    async dueForExpiry(tx: DbOrTx, limit: number): Promise<EnvelopeRow[]> {
      return tx
        .select()
        .from(envelopes)
        .where(and(inArray(envelopes.status, ['DRAFT', 'PENDING', 'SENT', 'PARTIALLY_SIGNED']), lt(envelopes.expiresAt, sql`now()`)))
        .orderBy(asc(envelopes.expiresAt), asc(envelopes.id))
        .limit(limit)
        .for('update', { skipLocked: true });
    },

    /** Envelopes in one of `statuses` (the terminal ones) past their retention date, the longest overdue first. */
    async dueForPurge(tx: DbOrTx, limit: number, statuses: readonly string[]): Promise<EnvelopeRow[]> {
      return tx
        .select()
        .from(envelopes)
        .where(and(isNull(envelopes.purgedAt), inArray(envelopes.status, [...statuses]), lt(envelopes.storageExpiresAt, sql`now()`)))
        .orderBy(asc(envelopes.storageExpiresAt), asc(envelopes.id))
        .limit(limit)
        .for('update', { skipLocked: true });
    },
  };
}

export type EnvelopesRepo = ReturnType<typeof createEnvelopesRepo>;
