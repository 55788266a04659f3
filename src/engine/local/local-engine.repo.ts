import { and, asc, eq, inArray, isNull, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { engineDocuments, engineEvents, engineFields, engineRecipients } from '../../db/schema/index.js';
import { actedCount, LIVE_STATUSES } from './document-views.js';
import { progressKey } from './local-engine.js';

export type DocumentRow = typeof engineDocuments.$inferSelect;
export type RecipientRow = typeof engineRecipients.$inferSelect;
export type FieldRow = typeof engineFields.$inferSelect;

export function createLocalEngineRepo() {
  return {
    async insertDocument(tx: DbOrTx, doc: typeof engineDocuments.$inferInsert): Promise<DocumentRow> {
      const [row] = await tx.insert(engineDocuments).values(doc).returning();
      return row;
    },

    /** In the order given (one statement; the answer is sorted by position, not trusted to keep VALUES order). */
    async insertRecipients(tx: DbOrTx, rows: (typeof engineRecipients.$inferInsert)[]): Promise<RecipientRow[]> {
      if (rows.length === 0) return [];
      const inserted = await tx.insert(engineRecipients).values(rows).returning();
      return inserted.sort((a, b) => a.position - b.position);
    },

    /** What a link is derived from: each recipient's salt, and whether its token's hash is stored yet. */
    async linkSalts(tx: DbOrTx, recipientIds: number[]): Promise<{ id: number; linkSalt: string; tokenHash: string | null }[]> {
      if (recipientIds.length === 0) return [];
      return tx
        .select({ id: engineRecipients.id, linkSalt: engineRecipients.linkSalt, tokenHash: engineRecipients.tokenHash })
        .from(engineRecipients)
        .where(inArray(engineRecipients.id, recipientIds));
    },

    /** Stores the hash of a migrated recipient's first new link (a no-op once it is there). */
    async fillTokenHash(tx: DbOrTx, recipientId: number, tokenHash: string): Promise<void> {
      await tx.update(engineRecipients).set({ tokenHash }).where(and(eq(engineRecipients.id, recipientId), isNull(engineRecipients.tokenHash)));
    },

    /** A new salt and its token's hash; the old link, and any pre-migration link, stop working. */
    async replaceLinkSalt(tx: DbOrTx, recipientId: number, linkSalt: string, tokenHash: string): Promise<void> {
      await tx.update(engineRecipients).set({ linkSalt, tokenHash, legacyTokenHash: null }).where(eq(engineRecipients.id, recipientId));
    },

    /**
     * Of the given blob keys of these documents, the ones a row references: a document's original or
     * sealed PDF, a recipient's signature image (which the signed fields' values name too), and, while
     * the document is live, the current version of the document as it stands (document-views.ts).
     */
    async referencedBlobKeys(tx: DbOrTx, documentIds: string[]): Promise<Set<string>> {
      if (documentIds.length === 0) return new Set();
      const [docs, recipients] = await Promise.all([
        tx
          .select({ id: engineDocuments.id, status: engineDocuments.status, originalKey: engineDocuments.originalKey, signedKey: engineDocuments.signedKey })
          .from(engineDocuments)
          .where(inArray(engineDocuments.id, documentIds)),
        tx
          .select({ documentId: engineRecipients.documentId, status: engineRecipients.status, imageKey: sql<string | null>`${engineRecipients.signature} ->> 'imageKey'` })
          .from(engineRecipients)
          .where(inArray(engineRecipients.documentId, documentIds)),
      ]);
      const current = docs.filter((d) => LIVE_STATUSES.has(d.status)).map((d) => progressKey(d.id, actedCount(recipients.filter((r) => r.documentId === d.id))));
      const keys = [...docs.flatMap((d) => [d.originalKey, d.signedKey]), ...recipients.map((r) => r.imageKey), ...current];
      return new Set(keys.filter((k): k is string => Boolean(k)));
    },

    async insertFields(tx: DbOrTx, rows: (typeof engineFields.$inferInsert)[]): Promise<FieldRow[]> {
      if (rows.length === 0) return [];
      return tx.insert(engineFields).values(rows).returning();
    },

    async deleteField(tx: DbOrTx, documentId: string, fieldId: number): Promise<boolean> {
      const rows = await tx.delete(engineFields).where(and(eq(engineFields.documentId, documentId), eq(engineFields.id, fieldId))).returning({ id: engineFields.id });
      return rows.length === 1;
    },

    async document(tx: DbOrTx, id: string, lock = false): Promise<DocumentRow | undefined> {
      const q = tx.select().from(engineDocuments).where(eq(engineDocuments.id, id));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    async recipients(tx: DbOrTx, documentId: string): Promise<RecipientRow[]> {
      return tx.select().from(engineRecipients).where(eq(engineRecipients.documentId, documentId)).orderBy(asc(engineRecipients.position));
    },

    async recipientByTokenHash(tx: DbOrTx, tokenHash: string): Promise<RecipientRow | undefined> {
      // A link issued before migration 0003 is still accepted by its own hash until revoked.
      const [row] = await tx.select().from(engineRecipients).where(or(eq(engineRecipients.tokenHash, tokenHash), eq(engineRecipients.legacyTokenHash, tokenHash)));
      return row;
    },

    async fields(tx: DbOrTx, documentId: string): Promise<FieldRow[]> {
      return tx.select().from(engineFields).where(eq(engineFields.documentId, documentId)).orderBy(asc(engineFields.id));
    },

    async updateDocument(tx: DbOrTx, id: string, set: Partial<typeof engineDocuments.$inferInsert>): Promise<void> {
      await tx.update(engineDocuments).set({ ...set, updatedAt: sql`now()` }).where(eq(engineDocuments.id, id));
    },

    async updateRecipient(tx: DbOrTx, id: number, set: Partial<typeof engineRecipients.$inferInsert>): Promise<void> {
      await tx.update(engineRecipients).set(set).where(eq(engineRecipients.id, id));
    },

    async setFieldValue(tx: DbOrTx, fieldId: number, value: string | null): Promise<void> {
      await tx.update(engineFields).set({ value }).where(eq(engineFields.id, fieldId));
    },

    async insertEvent(tx: DbOrTx, e: typeof engineEvents.$inferInsert): Promise<void> {
      await tx.insert(engineEvents).values(e);
    },

    async events(tx: DbOrTx, documentId: string) {
      return tx.select().from(engineEvents).where(eq(engineEvents.documentId, documentId)).orderBy(asc(engineEvents.id));
    },
  };
}

export type LocalEngineRepo = ReturnType<typeof createLocalEngineRepo>;
