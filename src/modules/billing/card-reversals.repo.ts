import { eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { cardReversals } from '../../db/schema/index.js';

export type CardReversalRow = typeof cardReversals.$inferSelect;

export function createCardReversalsRepo() {
  return {
    /** The claim of this refunded charge or dispute, made on its first event (nothing claimed yet). */
    async findOrCreate(tx: DbOrTx, key: Pick<CardReversalRow, 'topUpId' | 'customerId' | 'kind' | 'stripeObjectId'>): Promise<CardReversalRow> {
      await tx.insert(cardReversals).values(key).onConflictDoNothing({ target: cardReversals.stripeObjectId });
      const [row] = await tx.select().from(cardReversals).where(eq(cardReversals.stripeObjectId, key.stripeObjectId));
      return row;
    },

    async setClaim(tx: DbOrTx, id: string, values: Pick<CardReversalRow, 'claimedMicros' | 'stripeStatus' | 'updatedAt'>): Promise<void> {
      await tx.update(cardReversals).set(values).where(eq(cardReversals.id, id));
    },

    /** What Stripe holds back of a top-up across its refunds and disputes. */
    async claimedOf(tx: DbOrTx, topUpId: string): Promise<bigint> {
      const [row] = await tx
        .select({ micros: sql<string>`coalesce(sum(${cardReversals.claimedMicros}), 0)::text` })
        .from(cardReversals)
        .where(eq(cardReversals.topUpId, topUpId));
      return BigInt(row.micros);
    },
  };
}

export type CardReversalsRepo = ReturnType<typeof createCardReversalsRepo>;
