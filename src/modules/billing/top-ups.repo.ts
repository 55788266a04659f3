import { and, desc, eq, isNotNull, isNull, ne, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { cardTopUps } from '../../db/schema/index.js';

export type TopUpRow = typeof cardTopUps.$inferSelect;

export function createTopUpsRepo() {
  return {
    async insert(tx: DbOrTx, input: { customerId: string; amountMicros: bigint }): Promise<TopUpRow> {
      const [row] = await tx.insert(cardTopUps).values(input).returning();
      return row;
    },

    /** Records Stripe's session on the row, once: a row never changes the session it belongs to. */
    async attachSession(tx: DbOrTx, id: string, checkoutSessionId: string): Promise<boolean> {
      const rows = await tx
        .update(cardTopUps)
        .set({ checkoutSessionId })
        .where(and(eq(cardTopUps.id, id), isNull(cardTopUps.checkoutSessionId)))
        .returning({ id: cardTopUps.id });
      return rows.length === 1;
    },

    /** Top-ups a customer started since `since`: the bound on how many Checkout Sessions one account can open. */
    async countStartedSince(tx: DbOrTx, customerId: string, since: Date): Promise<number> {
      const [row] = await tx.select({ n: sql<number>`count(*)::int` }).from(cardTopUps).where(and(eq(cardTopUps.customerId, customerId), sql`${cardTopUps.createdAt} >= ${since}`));
      return Number(row.n);
    },

    async findBySession(tx: DbOrTx, checkoutSessionId: string): Promise<TopUpRow | undefined> {
      const [row] = await tx.select().from(cardTopUps).where(eq(cardTopUps.checkoutSessionId, checkoutSessionId));
      return row;
    },

    /**
     * The one transition that credits: only the caller whose UPDATE moved the row to paid goes on to
     * credit the balance, whatever Stripe delivers and however often. An expired row may still be paid
     * (our sweep expired it while Stripe was still collecting an async payment).
     */
    async markPaid(tx: DbOrTx, id: string, at: Date, paymentIntentId: string | null): Promise<TopUpRow | undefined> {
      const [row] = await tx
        .update(cardTopUps)
        .set({ status: 'paid', paidAt: at, paymentIntentId })
        .where(and(eq(cardTopUps.id, id), ne(cardTopUps.status, 'paid')))
        .returning();
      return row;
    },

    /** The paid top-up a refund or dispute names, locked: events about one payment apply one at a time. */
    async lockByPaymentIntent(tx: DbOrTx, paymentIntentId: string): Promise<TopUpRow | undefined> {
      const [row] = await tx.select().from(cardTopUps).where(eq(cardTopUps.paymentIntentId, paymentIntentId)).for('update');
      return row;
    },

    async setReversal(tx: DbOrTx, id: string, values: Pick<TopUpRow, 'reversedMicros' | 'unrecoveredMicros'>): Promise<void> {
      await tx.update(cardTopUps).set(values).where(eq(cardTopUps.id, id));
    },

    async setLedgerEntry(tx: DbOrTx, id: string, ledgerEntryId: string): Promise<void> {
      await tx.update(cardTopUps).set({ ledgerEntryId }).where(eq(cardTopUps.id, id));
    },

    async markExpired(tx: DbOrTx, id: string): Promise<boolean> {
      const rows = await tx
        .update(cardTopUps)
        .set({ status: 'expired' })
        .where(and(eq(cardTopUps.id, id), eq(cardTopUps.status, 'pending')))
        .returning({ id: cardTopUps.id });
      return rows.length === 1;
    },

    /** Pending rows that never reached Stripe (before `unsentBefore`) or that Stripe never settled (before `before`). */
    async expireStale(tx: DbOrTx, cutoffs: { unsentBefore: Date; before: Date }, limit = 500): Promise<{ id: string; customerId: string }[]> {
      const unsent = cutoffs.unsentBefore.toISOString();
      const stale = cutoffs.before.toISOString();
      return tx
        .update(cardTopUps)
        .set({ status: 'expired' })
        .where(
          sql`${cardTopUps.id} IN (SELECT id FROM ${cardTopUps} WHERE ${cardTopUps.status} = 'pending' AND ((${cardTopUps.checkoutSessionId} IS NULL AND ${cardTopUps.createdAt} < ${unsent}::timestamptz) OR ${cardTopUps.createdAt} < ${stale}::timestamptz) ORDER BY ${cardTopUps.createdAt} LIMIT ${limit} FOR UPDATE SKIP LOCKED)`,
        )
        .returning({ id: cardTopUps.id, customerId: cardTopUps.customerId });
    },

    /** The customer's top-ups that reached the payment page, newest first. */
    async listForCustomer(tx: DbOrTx, customerId: string, limit: number): Promise<TopUpRow[]> {
      return tx
        .select()
        .from(cardTopUps)
        .where(and(eq(cardTopUps.customerId, customerId), isNotNull(cardTopUps.checkoutSessionId)))
        .orderBy(desc(cardTopUps.createdAt), desc(cardTopUps.id))
        .limit(limit);
    },
  };
}

export type TopUpsRepo = ReturnType<typeof createTopUpsRepo>;
