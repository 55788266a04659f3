import { sql } from 'drizzle-orm';
import { bigint, check, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';

/**
 * One row per x402 payment Signet asked a facilitator to settle, written down before the settle (keyed by
 * the authorization: its payer and EIP-3009 nonce) and resolved after it, apart from the ledger, so that
 * a payment whose call never commits, or whose settle had no clear answer, is still on record. A tx hash
 * is recorded once: a settle answering one already on record pays nothing new.
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
    /** The EIP-3009 authorization's nonce (null on rows recorded before settlements were written down first). */
    nonce: text('nonce'),
    /** The authorization's validBefore: past it, a transfer not on-chain can never land. */
    validBefore: timestamp('valid_before', { withTimezone: true }),
    /** Null until the facilitator names the transaction. */
    txHash: text('tx_hash').unique(),
    envelopeId: uuid('envelope_id'),
    requestId: text('request_id'),
    /**
     * `pending` from before the settle until its outcome is known; `settled` once the facilitator
     * confirmed it, until the paid call commits (`committed`) or does not (`orphaned`: a refund is due);
     * `failed` when nothing moved (the settle was refused, or the authorization expired unused).
     * A `pending` row whose settle had no clear answer is resolved on-chain by the sweep (`orphaned` or
     * `failed`), or `unknown` when it cannot tell (an operator alert); a `settled` row a crash left
     * behind becomes `orphaned`.
     */
    status: text('status', { enum: ['pending', 'settled', 'committed', 'orphaned', 'failed', 'unknown'] }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('x402_settlements_amount_positive', sql`${t.amountMicros} > 0`),
    index('x402_settlements_envelope_idx').on(t.envelopeId),
    uniqueIndex('x402_settlements_authorization_uq').on(t.network, t.asset, t.payer, t.nonce),
    // The sweeps look for rows still open (pending, settled) by age.
    index('x402_settlements_status_idx').on(t.status, t.createdAt),
  ],
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
