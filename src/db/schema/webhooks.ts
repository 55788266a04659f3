import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';

export const webhooks = pgTable(
  'webhooks',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    mode: text('mode', { enum: ['live', 'test'] }).notNull(),
    url: text('url').notNull(),
    /** Event names, or ['*'] for all. */
    events: jsonb('events').$type<string[]>().notNull(),
    description: text('description'),
    /** The HMAC key. Kept because every delivery is signed with it; shown to the customer only once. */
    secret: text('secret').notNull(),
    /** standard: {event, deliveredAt, envelope} with t=…,v1=…; alt: SPEC's Alt body and sha256= header. */
    format: text('format', { enum: ['standard', 'alt'] }).notNull().default('standard'),
    active: boolean('active').notNull().default(true),
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
    disabledReason: text('disabled_reason'),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('webhooks_customer_idx').on(t.customerId, t.mode)],
);

export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    webhookId: uuid('webhook_id')
      .notNull()
      .references(() => webhooks.id),
    event: text('event').notNull(),
    envelopeId: uuid('envelope_id'),
    eventId: bigint('event_id', { mode: 'number' }),
    /** A redelivery: the delivery whose payload it sends again (a new row, so each attempt keeps its own outcome). */
    redeliveryOf: uuid('redelivery_of'),
    /** What is delivered, fixed when the event happened: {envelope, recipient}. */
    payload: jsonb('payload').$type<{ envelope: Record<string, unknown>; recipient: Record<string, unknown> | null; occurredAt: string; data?: Record<string, unknown>; bulkSend?: Record<string, unknown> }>().notNull(),
    status: text('status', { enum: ['PENDING', 'SUCCESS', 'FAILED'] }).notNull().default('PENDING'),
    attempts: integer('attempts').notNull().default(0),
    responseCode: integer('response_code'),
    errorMessage: text('error_message'),
    lastAttemptAt: timestamp('last_attempt_at', { withTimezone: true }),
    nextRetryAt: timestamp('next_retry_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().default(sql`now()`),
  },
  (t) => [index('webhook_deliveries_webhook_idx').on(t.webhookId, t.createdAt), index('webhook_deliveries_status_idx').on(t.status)],
);
