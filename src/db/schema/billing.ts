import { sql } from 'drizzle-orm';
import { bigint, check, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';

/** Append-only: rows are inserted, never updated or deleted. */
export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    /** `reversal`: a card top-up's credit taken back after a refund or a dispute of the card payment (not spending). */
    direction: text('direction', { enum: ['debit', 'credit', 'refund', 'reversal'] }).notNull(),
    amountMicros: bigint('amount_micros', { mode: 'bigint' }).notNull(),
    balanceAfterMicros: bigint('balance_after_micros', { mode: 'bigint' }).notNull(),
    operation: text('operation'),
    envelopeId: uuid('envelope_id'),
    envelopeTitle: text('envelope_title'),
    description: text('description').notNull(),
    txHash: text('tx_hash'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('ledger_amount_positive', sql`${t.amountMicros} > 0`),
    index('ledger_customer_created_idx').on(t.customerId, t.createdAt),
    index('ledger_envelope_idx').on(t.envelopeId),
  ],
);
