import { and, count, desc, eq, gte, inArray, notInArray, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { envelopes, ledgerEntries } from '../../db/schema/index.js';

/** Net spending of a ledger row: a debit counts, a refund gives it back, a credit (top-up) is not spending. */
const NET_SPENT = sql<string>`coalesce(sum(case ${ledgerEntries.direction} when 'debit' then ${ledgerEntries.amountMicros} when 'refund' then -${ledgerEntries.amountMicros} else 0 end), 0)::text`;

/** Read-only aggregates over a customer's envelopes and ledger, for the account summary; all scoped by customer in the query. */
export function createSummaryRepo() {
  const spentBy = async (tx: DbOrTx, customerId: string, unit: 'day' | 'month', since: Date, format: string) => {
    const bucket = sql<string>`to_char(date_trunc(${sql.raw(`'${unit}'`)}, ${ledgerEntries.createdAt} AT TIME ZONE 'UTC'), ${sql.raw(`'${format}'`)})`;
    const rows = await tx
      .select({ bucket, micros: NET_SPENT })
      .from(ledgerEntries)
      .where(and(eq(ledgerEntries.customerId, customerId), inArray(ledgerEntries.direction, ['debit', 'refund']), gte(ledgerEntries.createdAt, since)))
      .groupBy(bucket)
      .orderBy(bucket);
    return rows.map((r) => ({ bucket: r.bucket, micros: BigInt(r.micros) }));
  };

  return {
    /** All-time net spending (debits minus refunds), in micros. */
    async totalSpent(tx: DbOrTx, customerId: string): Promise<bigint> {
      const [row] = await tx.select({ micros: NET_SPENT }).from(ledgerEntries).where(eq(ledgerEntries.customerId, customerId));
      return BigInt(row.micros);
    },

    async envelopeCountsByStatus(tx: DbOrTx, owner: { customerId: string; mode: 'live' | 'test' }): Promise<Record<string, number>> {
      const rows = await tx
        .select({ status: envelopes.status, n: count() })
        .from(envelopes)
        .where(and(eq(envelopes.customerId, owner.customerId), eq(envelopes.mode, owner.mode)))
        .groupBy(envelopes.status);
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    },

    /** Days (YYYY-MM-DD, UTC) since `since` with net spending, oldest first. */
    spentByDay: (tx: DbOrTx, customerId: string, since: Date) => spentBy(tx, customerId, 'day', since, 'YYYY-MM-DD'),
    /** Months (YYYY-MM, UTC) since `since` with net spending, oldest first. */
    spentByMonth: (tx: DbOrTx, customerId: string, since: Date) => spentBy(tx, customerId, 'month', since, 'YYYY-MM'),

    /** The most recently active envelopes not in a terminal state. */
    async recentOpenEnvelopes(tx: DbOrTx, owner: { customerId: string; mode: 'live' | 'test' }, terminal: readonly string[], limit: number) {
      return tx
        .select({ id: envelopes.id, title: envelopes.title, status: envelopes.status, createdAt: envelopes.createdAt, updatedAt: envelopes.updatedAt })
        .from(envelopes)
        .where(and(eq(envelopes.customerId, owner.customerId), eq(envelopes.mode, owner.mode), notInArray(envelopes.status, [...terminal])))
        .orderBy(desc(envelopes.updatedAt), desc(envelopes.id))
        .limit(limit);
    },
  };
}

export type SummaryRepo = ReturnType<typeof createSummaryRepo>;
