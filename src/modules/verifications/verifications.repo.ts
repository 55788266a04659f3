import { and, count, desc, eq, gt, inArray, lte, or, sql } from 'drizzle-orm';
import { rowsOf, type DbOrTx } from '../../db/client.js';
import { verifications } from '../../db/schema/index.js';
import type { Owner } from '../envelopes/envelopes.repo.js';

export type VerificationRow = typeof verifications.$inferSelect;
export type VerificationStatus = VerificationRow['status'];

const owned = (id: string, o: Owner) => and(eq(verifications.id, id), eq(verifications.customerId, o.customerId), eq(verifications.mode, o.mode));

/**
 * A status as callers see it at `now`: a pending row past its expiresAt is expired whether or not the
 * sweep has written that yet, so the list filter agrees with the status each row shows.
 */
function statusIs(status: VerificationStatus, now: Date) {
  if (status === 'pending') return and(eq(verifications.status, 'pending'), gt(verifications.expiresAt, now));
  if (status === 'expired') return or(eq(verifications.status, 'expired'), and(eq(verifications.status, 'pending'), lte(verifications.expiresAt, now)));
  return eq(verifications.status, status);
}

export function createVerificationsRepo() {
  /** One row, locked FOR UPDATE when asked: the lock that makes concurrent code checks take turns. */
  const lockable = async (q: { for(s: 'update'): Promise<VerificationRow[]> } & PromiseLike<VerificationRow[]>, lock: boolean) => {
    const [row] = lock ? await q.for('update') : await q;
    return row as VerificationRow | undefined;
  };

  return {
    async insert(tx: DbOrTx, row: typeof verifications.$inferInsert): Promise<VerificationRow> {
      const [r] = await tx.insert(verifications).values(row).returning();
      return r;
    },

    find: (tx: DbOrTx, id: string, owner: Owner, lock = false) => lockable(tx.select().from(verifications).where(owned(id, owner)), lock),

    findById: (tx: DbOrTx, id: string, lock = false) => lockable(tx.select().from(verifications).where(eq(verifications.id, id)), lock),

    findByTokenHash: (tx: DbOrTx, tokenHash: string, lock = false) => lockable(tx.select().from(verifications).where(eq(verifications.tokenHash, tokenHash)), lock),

    findByProviderRef: (tx: DbOrTx, provider: string, ref: string, lock = false) =>
      lockable(tx.select().from(verifications).where(and(eq(verifications.provider, provider), eq(verifications.providerRef, ref))), lock),

    /** A gated recipient has at most one verification; the newest wins should a retry ever have made two. */
    findByRecipient: (tx: DbOrTx, engineRecipientId: string, lock = false) =>
      lockable(tx.select().from(verifications).where(eq(verifications.engineRecipientId, engineRecipientId)).orderBy(desc(verifications.createdAt)).limit(1), lock),

    async findByRecipients(tx: DbOrTx, engineRecipientIds: string[]): Promise<VerificationRow[]> {
      if (engineRecipientIds.length === 0) return [];
      return tx.select().from(verifications).where(inArray(verifications.engineRecipientId, engineRecipientIds)).orderBy(verifications.createdAt);
    },

    async list(tx: DbOrTx, owner: Owner, filter: { status?: VerificationStatus; now: Date }, page: { limit: number; offset: number }) {
      const where = and(eq(verifications.customerId, owner.customerId), eq(verifications.mode, owner.mode), filter.status ? statusIs(filter.status, filter.now) : undefined);
      const [rows, [{ total }]] = await Promise.all([
        tx.select().from(verifications).where(where).orderBy(desc(verifications.createdAt), desc(verifications.id)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(verifications).where(where),
      ]);
      return { rows, total };
    },

    async update(tx: DbOrTx, id: string, set: Partial<typeof verifications.$inferInsert>): Promise<VerificationRow> {
      const [row] = await tx.update(verifications).set({ ...set, updatedAt: sql`now()` }).where(eq(verifications.id, id)).returning();
      return row;
    },

    /** The pending verifications of these gated recipients become canceled (their envelope ended). */
    async cancelPendingOfRecipients(tx: DbOrTx, engineRecipientIds: string[]): Promise<{ id: string; customerId: string }[]> {
      if (engineRecipientIds.length === 0) return [];
      return tx
        .update(verifications)
        .set({ status: 'canceled', codeHash: null, codeExpiresAt: null, updatedAt: sql`now()` })
        .where(and(inArray(verifications.engineRecipientId, engineRecipientIds), eq(verifications.status, 'pending')))
        .returning({ id: verifications.id, customerId: verifications.customerId });
    },

    /** Pending rows past expiresAt become expired, a bounded batch per run; returns what changed. */
    async expireDue(tx: DbOrTx, now: Date, limit = 500): Promise<{ id: string; customerId: string }[]> {
      return tx
        .update(verifications)
        .set({ status: 'expired', codeHash: null, updatedAt: sql`now()` })
        .where(
          sql`${verifications.id} IN (SELECT id FROM ${verifications} WHERE ${verifications.status} = 'pending' AND ${verifications.expiresAt} <= ${now.toISOString()}::timestamptz ORDER BY ${verifications.expiresAt} LIMIT ${limit} FOR UPDATE SKIP LOCKED)`,
        )
        .returning({ id: verifications.id, customerId: verifications.customerId });
    },

    /**
     * The language a code email is written in: a signing recipient's own, else the account's default
     * (a built-in engine's recipient ids are numbers; another engine's have no language of ours).
     */
    async readerLocale(tx: DbOrTx, row: Pick<VerificationRow, 'customerId' | 'engineRecipientId'>): Promise<{ recipient: string | null; account: string | null }> {
      const recipientId = row.engineRecipientId && /^\d{1,18}$/.test(row.engineRecipientId) ? row.engineRecipientId : null;
      const [r] = rowsOf<{ recipient: string | null; account: string | null }>(
        await tx.execute(sql`SELECT (SELECT locale FROM engine_recipients WHERE id = ${recipientId}::bigint) AS recipient, (SELECT default_locale FROM customers WHERE id = ${row.customerId}) AS account`),
      );
      return r ?? { recipient: null, account: null };
    },
  };
}

export type VerificationsRepo = ReturnType<typeof createVerificationsRepo>;
