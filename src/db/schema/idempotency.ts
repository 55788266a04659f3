import { index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';

/**
 * One row per (customer, mode, key). `in_progress` rows are reservations held under a lease;
 * `done` rows hold the response that a retry replays byte for byte.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    mode: text('mode', { enum: ['live', 'test'] }).notNull(),
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(),
    state: text('state', { enum: ['in_progress', 'done'] }).notNull(),
    /** Identifies the request holding the reservation; the final write must present it. */
    leaseToken: uuid('lease_token').notNull(),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }).notNull(),
    responseStatus: integer('response_status'),
    responseHeaders: jsonb('response_headers').$type<Record<string, string>>(),
    responseBody: text('response_body'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.mode, t.key] }), index('idempotency_expires_idx').on(t.expiresAt)],
);
