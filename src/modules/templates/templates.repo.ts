import { and, count, desc, eq, getTableColumns, inArray, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { templates } from '../../db/schema/index.js';
import type { Owner } from '../envelopes/envelopes.repo.js';

export type TemplateRow = typeof templates.$inferSelect;
/** A list item: every column but the fields, which can be many. */
export type TemplateSummaryRow = Omit<TemplateRow, 'fields'>;

const owned = (id: string, o: Owner) => and(eq(templates.id, id), eq(templates.customerId, o.customerId), eq(templates.mode, o.mode));

const { fields: _fields, ...summaryColumns } = getTableColumns(templates);

export function createTemplatesRepo() {
  return {
    async insert(tx: DbOrTx, row: typeof templates.$inferInsert): Promise<TemplateRow> {
      const [r] = await tx.insert(templates).values(row).returning();
      return r;
    },

    /** Scoped by owner inside the query; `lock` serializes the updates and the delete of one template. */
    async find(tx: DbOrTx, id: string, owner: Owner, lock = false): Promise<TemplateRow | undefined> {
      const q = tx.select().from(templates).where(owned(id, owner));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    async list(tx: DbOrTx, owner: Owner, page: { limit: number; offset: number }): Promise<{ rows: TemplateSummaryRow[]; total: number }> {
      const where = and(eq(templates.customerId, owner.customerId), eq(templates.mode, owner.mode));
      const [rows, [{ total }]] = await Promise.all([
        tx.select(summaryColumns).from(templates).where(where).orderBy(desc(templates.createdAt), desc(templates.id)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(templates).where(where),
      ]);
      return { rows, total };
    },

    async update(tx: DbOrTx, id: string, set: Partial<Pick<typeof templates.$inferInsert, 'title' | 'meta'>>): Promise<TemplateRow> {
      const [row] = await tx.update(templates).set({ ...set, updatedAt: sql`now()` }).where(eq(templates.id, id)).returning();
      return row;
    },

    /** The field editor's saves: the whole list, rewritten under the row lock that find(…, true) took. */
    async setFields(tx: DbOrTx, id: string, fields: TemplateRow['fields']): Promise<TemplateRow> {
      const [row] = await tx.update(templates).set({ fields, updatedAt: sql`now()` }).where(eq(templates.id, id)).returning();
      return row;
    },

    async delete(tx: DbOrTx, id: string): Promise<void> {
      await tx.delete(templates).where(eq(templates.id, id));
    },

    /** The document keys that rows of these templates reference (the blob sweep keeps exactly these). */
    async referencedBlobKeys(tx: DbOrTx, ids: string[]): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const rows = await tx.select({ key: templates.documentKey }).from(templates).where(inArray(templates.id, ids));
      return new Set(rows.map((r) => r.key));
    },
  };
}

export type TemplatesRepo = ReturnType<typeof createTemplatesRepo>;
