import { and, eq, gt, lt, sql } from 'drizzle-orm';
import type { DbOrTx } from '../db/client.js';
import { preparedPer } from '../db/prepared.js';
import { idempotencyKeys } from '../db/schema/index.js';

export type IdempotencyScope = { customerId: string; mode: 'live' | 'test'; key: string };
export type StoredResponse = { status: number; headers: Record<string, string>; body: string };
export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

const scopeWhere = (s: IdempotencyScope) =>
  and(eq(idempotencyKeys.customerId, s.customerId), eq(idempotencyKeys.mode, s.mode), eq(idempotencyKeys.key, s.key));

const msFromNow = (ms: number) => sql`now() + (${ms}::int * interval '1 millisecond')`;

export function createIdempotencyRepo() {
  // Every billable call reserves its key first, on the pool: prepared once, as the hot reads are.
  const tryInsertStmt = preparedPer((tx) =>
    tx
      .insert(idempotencyKeys)
      .values({
        customerId: sql.placeholder('customerId'),
        mode: sql.placeholder('mode'),
        key: sql.placeholder('key'),
        fingerprint: sql.placeholder('fingerprint'),
        state: 'in_progress',
        leaseToken: sql.placeholder('leaseToken'),
        leaseExpiresAt: sql`now() + (${sql.placeholder('leaseMs')}::int * interval '1 millisecond')`,
        expiresAt: sql`now() + (${sql.placeholder('ttlMs')}::int * interval '1 millisecond')`,
      })
      .onConflictDoNothing()
      .returning({ leaseToken: idempotencyKeys.leaseToken })
      .prepare('idempotency_try_insert'),
  );

  // Every mutation with a key ends with it, inside its transaction.
  const finishStmt = preparedPer((tx) =>
    tx
      .update(idempotencyKeys)
      .set({ state: 'done', responseStatus: sql`${sql.placeholder('status')}`, responseHeaders: sql`${sql.placeholder('headers')}::jsonb`, responseBody: sql`${sql.placeholder('body')}` })
      .where(
        and(
          eq(idempotencyKeys.customerId, sql.placeholder('customerId')),
          eq(idempotencyKeys.mode, sql.placeholder('mode')),
          eq(idempotencyKeys.key, sql.placeholder('key')),
          eq(idempotencyKeys.leaseToken, sql.placeholder('leaseToken')),
          eq(idempotencyKeys.state, 'in_progress'),
        ),
      )
      .returning({ key: idempotencyKeys.key })
      .prepare('idempotency_finish'),
  );

  return {
    /** Inserts a fresh reservation; undefined when a row for the key already exists. */
    async tryInsert(tx: DbOrTx, s: IdempotencyScope, fingerprint: string, leaseToken: string, leaseMs: number, ttlMs: number) {
      const [row] = await tryInsertStmt(tx).execute({ ...s, fingerprint, leaseToken, leaseMs, ttlMs });
      return row;
    },

    /** Locks the existing row and tells whether its lease or its whole record has lapsed. */
    async lockExisting(tx: DbOrTx, s: IdempotencyScope) {
      const [row] = await tx
        .select({
          row: idempotencyKeys,
          leaseLapsed: sql<boolean>`${idempotencyKeys.leaseExpiresAt} < now()`,
          expired: sql<boolean>`${idempotencyKeys.expiresAt} < now()`,
        })
        .from(idempotencyKeys)
        .where(scopeWhere(s))
        .for('update');
      return row;
    },

    /** Whether a record of this very request (the same fingerprint) is under `s` and not past its TTL. */
    async holds(tx: DbOrTx, s: IdempotencyScope, fingerprint: string): Promise<boolean> {
      const rows = await tx
        .select({ key: idempotencyKeys.key })
        .from(idempotencyKeys)
        .where(and(scopeWhere(s), eq(idempotencyKeys.fingerprint, fingerprint), gt(idempotencyKeys.expiresAt, sql`now()`)));
      return rows.length === 1;
    },

    /** Takes over a lapsed reservation or an expired record as a new reservation. */
    async renew(tx: DbOrTx, s: IdempotencyScope, fingerprint: string, leaseToken: string, leaseMs: number, ttlMs: number, resetRecord: boolean) {
      await tx
        .update(idempotencyKeys)
        .set({
          fingerprint,
          state: 'in_progress',
          leaseToken,
          leaseExpiresAt: msFromNow(leaseMs),
          ...(resetRecord
            ? { expiresAt: msFromNow(ttlMs), createdAt: sql`now()`, responseStatus: null, responseHeaders: null, responseBody: null }
            : {}),
        })
        .where(scopeWhere(s));
    },

    /** Stores the final response; false when this request no longer holds the reservation. */
    async finish(tx: DbOrTx, s: IdempotencyScope, leaseToken: string, response: StoredResponse): Promise<boolean> {
      const rows = await finishStmt(tx).execute({ ...s, leaseToken, status: response.status, headers: JSON.stringify(response.headers), body: response.body });
      return rows.length === 1;
    },

    /** Drops a reservation whose request failed with a 5xx, so a retry runs again at once. */
    async release(tx: DbOrTx, s: IdempotencyScope, leaseToken: string): Promise<void> {
      await tx
        .delete(idempotencyKeys)
        .where(and(scopeWhere(s), eq(idempotencyKeys.leaseToken, leaseToken), eq(idempotencyKeys.state, 'in_progress')));
    },

    async purgeExpired(tx: DbOrTx): Promise<number> {
      const rows = await tx
        .delete(idempotencyKeys)
        .where(and(lt(idempotencyKeys.expiresAt, sql`now()`), lt(idempotencyKeys.leaseExpiresAt, sql`now()`)))
        .returning({ key: idempotencyKeys.key });
      return rows.length;
    },
  };
}

export type IdempotencyRepo = ReturnType<typeof createIdempotencyRepo>;
