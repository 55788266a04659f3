import { sql } from 'drizzle-orm';
import { bigint, check, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';
import { cardTopUps } from './dashboard.js';

export const CARD_REVERSAL_KINDS = ['refund', 'dispute'] as const;

/**
 * What Stripe holds back of a paid card top-up, per refunded charge (Stripe reports the amount refunded
 * so far) or per dispute (its amount while it is open or lost, nothing once it ended in our favour).
 * The balance follows the sum of a top-up's claims (card_top_ups.reversed_micros).
 */
export const cardReversals = pgTable(
  'card_reversals',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    topUpId: uuid('top_up_id')
      .notNull()
      .references(() => cardTopUps.id),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    kind: text('kind', { enum: CARD_REVERSAL_KINDS }).notNull(),
    /** The charge (ch_…) of a refund, the dispute (dp_…) of a dispute. */
    stripeObjectId: text('stripe_object_id').notNull().unique(),
    /** A dispute's status as last applied (won, warning_closed and prevented are final); null for a refund. */
    stripeStatus: text('stripe_status'),
    claimedMicros: bigint('claimed_micros', { mode: 'bigint' }).notNull().default(sql`0`),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('card_reversals_top_up_idx').on(t.topUpId), check('card_reversals_claimed_not_negative', sql`${t.claimedMicros} >= 0`)],
);
