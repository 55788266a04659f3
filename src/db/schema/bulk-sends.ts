import { index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';

/** Who asked for a bulk send: its rows are created by jobs, on the caller's behalf and at its price. */
export type BulkSendCaller = {
  via: 'api_key' | 'wallet_jwt' | 'session' | 'prepare_link' | 'signing_link';
  keyId: string | null;
  keyPrefix?: string;
  walletAddress?: string;
  testModeHeader: boolean;
  requestId: string;
  ip: string;
};

export const BULK_SEND_STATUSES = ['QUEUED', 'RUNNING', 'COMPLETED', 'CANCELLED'] as const;
/**
 * A row's life: REFUSED at the request (never queued, never charged); PENDING until a worker claims it
 * (CLAIMED, with a lease); then CREATED (its envelope committed with it) or FAILED (a rule refused it
 * at creation, nothing charged); SKIPPED when the bulk send was cancelled before it was created.
 */
export const BULK_ROW_STATUSES = ['REFUSED', 'PENDING', 'CLAIMED', 'CREATED', 'FAILED', 'SKIPPED'] as const;

/** A batch of envelopes made from one template, one per row (POST /v1/templates/{id}/bulk-sends). */
export const bulkSends = pgTable(
  'bulk_sends',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    mode: text('mode', { enum: ['live', 'test'] }).notNull(),
    templateId: uuid('template_id').notNull(),
    status: text('status', { enum: BULK_SEND_STATUSES }).notNull(),
    caller: jsonb('caller').$type<BulkSendCaller>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    endedAt: timestamp('ended_at', { withTimezone: true }),
  },
  (t) => [index('bulk_sends_customer_created_idx').on(t.customerId, t.mode, t.createdAt)],
);

export const bulkSendRows = pgTable(
  'bulk_send_rows',
  {
    bulkSendId: uuid('bulk_send_id')
      .notNull()
      .references(() => bulkSends.id, { onDelete: 'cascade' }),
    index: integer('index').notNull(),
    status: text('status', { enum: BULK_ROW_STATUSES }).notNull(),
    /** The row as a from-template body (with `prefill`); null for a refused row. */
    input: jsonb('input').$type<Record<string, unknown>>(),
    envelopeId: uuid('envelope_id'),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    claimedBy: text('claimed_by'),
    claimedUntil: timestamp('claimed_until', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.bulkSendId, t.index] }), index('bulk_send_rows_status_idx').on(t.bulkSendId, t.status)],
);
