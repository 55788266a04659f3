import { sql } from 'drizzle-orm';
import { bigint, check, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';

/**
 * One row per x402 payment the facilitator settled: the on-chain fact, kept apart from the ledger so it
 * survives when the request's transaction does not commit (then an operator refunds it by hand). The
 * unique txHash makes recording it twice a no-op.
 */
export const x402Settlements = pgTable(
  'x402_settlements',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    /** Lower-case `0x` + 40 hex: who paid. */
    payer: text('payer').notNull(),
    /** What the call cost, in micros; `amount` is the same in the asset's own units, as signed. */
    amountMicros: bigint('amount_micros', { mode: 'bigint' }).notNull(),
    amount: text('amount').notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    txHash: text('tx_hash').notNull().unique(),
    envelopeId: uuid('envelope_id'),
    requestId: text('request_id'),
    /**
     * `settled` as soon as the facilitator confirmed it (its own transaction, where the database has a
     * second connection), `committed` with the paid call's transaction, `orphaned` when that did not
     * commit (refund due). A `settled` row left behind by a crash is orphaned by a periodic sweep.
     */
    status: text('status', { enum: ['settled', 'committed', 'orphaned'] }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check('x402_settlements_amount_positive', sql`${t.amountMicros} > 0`), index('x402_settlements_envelope_idx').on(t.envelopeId)],
);

/**
 * A payment to give back to a wallet: Signet holds no key and sends nothing on-chain, so the operator
 * sends it and records its hash with POST /ops/refunds/{id}/complete. One per settlement.
 */
export const x402Refunds = pgTable(
  'x402_refunds',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    settlementId: uuid('settlement_id')
      .notNull()
      .unique()
      .references(() => x402Settlements.id),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    envelopeId: uuid('envelope_id'),
    payer: text('payer').notNull(),
    amountMicros: bigint('amount_micros', { mode: 'bigint' }).notNull(),
    originalTxHash: text('original_tx_hash').notNull(),
    reason: text('reason').notNull(),
    status: text('status', { enum: ['pending', 'completed'] }).notNull().default('pending'),
    refundTxHash: text('refund_tx_hash'),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('x402_refunds_status_idx').on(t.status)],
);
