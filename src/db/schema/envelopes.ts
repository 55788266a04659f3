import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, doublePrecision, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';
import type { FieldRules } from '../../engine/field-rules.js';

/** The particulars of a listed event: a recipient's place passing from one person to another. */
export type EventDetails = { from: { name: string; email: string }; to: { name: string; email: string }; by: 'sender' | 'recipient'; reason?: string };

/** The service's stored copy of an envelope. The engine is authoritative for live status. */
export const envelopes = pgTable(
  'envelopes',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    mode: text('mode', { enum: ['live', 'test'] }).notNull(),
    engineEnvelopeId: text('engine_envelope_id').notNull(),
    engineNumericId: text('engine_numeric_id'),
    status: text('status').notNull(),
    title: text('title'),
    meta: jsonb('meta').$type<{ subject?: string; message?: string; redirectUrl?: string }>().notNull().default({}),
    testSend: boolean('test_send').notNull().default(false),
    documentSha256: text('document_sha256').notNull(),
    pageCount: integer('page_count').notNull(),
    detectedFromPlaceholders: boolean('detected_from_placeholders').notNull().default(false),
    /** The debit that paid for distribution; a refund credits exactly this back. */
    chargedMicros: bigint('charged_micros', { mode: 'bigint' }).notNull().default(sql`0`),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    storageExpiryDays: integer('storage_expiry_days').notNull(),
    storageExpiresAt: timestamp('storage_expires_at', { withTimezone: true }).notNull(),
    purgedAt: timestamp('purged_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
  },
  (t) => [
    index('envelopes_customer_created_idx').on(t.customerId, t.mode, t.createdAt),
    uniqueIndex('envelopes_engine_idx').on(t.engineEnvelopeId),
    index('envelopes_expiry_idx').on(t.status, t.expiresAt),
    index('envelopes_storage_expiry_idx').on(t.storageExpiresAt),
    // The Documenso engine finds an envelope by Documenso's numeric id (its webhooks name no other).
    index('envelopes_engine_numeric_idx').on(t.engineNumericId),
  ],
);

export const envelopeRecipients = pgTable(
  'envelope_recipients',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    envelopeId: uuid('envelope_id')
      .notNull()
      .references(() => envelopes.id),
    position: integer('position').notNull(),
    email: text('email').notNull(),
    name: text('name').notNull(),
    role: text('role').notNull(),
    signingOrder: integer('signing_order'),
    engineRecipientId: text('engine_recipient_id').notNull(),
    signingStatus: text('signing_status').notNull().default('NOT_SIGNED'),
    readStatus: text('read_status').notNull().default('NOT_OPENED'),
    sendStatus: text('send_status').notNull().default('NOT_SENT'),
    status: text('status').notNull().default('PENDING'),
    signedAt: timestamp('signed_at', { withTimezone: true }),
    viewedAt: timestamp('viewed_at', { withTimezone: true }),
    rejectedAt: timestamp('rejected_at', { withTimezone: true }),
    rejectionReason: text('rejection_reason'),
    /** When the recipient agreed to electronic records and signatures (the engine's, copied by the sync: its event is listed once). */
    consentedAt: timestamp('consented_at', { withTimezone: true }),
    verificationRequired: boolean('verification_required').notNull().default(false),
    /** The language the recipient is addressed in; null: the account's default. */
    locale: text('locale'),
  },
  (t) => [index('envelope_recipients_envelope_idx').on(t.envelopeId), index('envelope_recipients_engine_recipient_idx').on(t.engineRecipientId)],
);

export const envelopeFields = pgTable(
  'envelope_fields',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    envelopeId: uuid('envelope_id')
      .notNull()
      .references(() => envelopes.id),
    /** SPEC's fieldId: the engine's field identifier. */
    engineFieldId: bigint('engine_field_id', { mode: 'number' }).notNull(),
    recipientEmail: text('recipient_email').notNull(),
    type: text('type').notNull(),
    page: integer('page').notNull(),
    x: doublePrecision('x').notNull(),
    y: doublePrecision('y').notNull(),
    width: doublePrecision('width').notNull(),
    height: doublePrecision('height').notNull(),
    /** RADIO and DROPDOWN: the choices (what a later field's condition on this one is checked against). */
    options: jsonb('options').$type<string[]>(),
    /** The field's rules as the engine keeps them (a condition by the controlling field's engineFieldId); null: none. */
    rules: jsonb('rules').$type<FieldRules>(),
  },
  (t) => [index('envelope_fields_envelope_idx').on(t.envelopeId)],
);

export const envelopeEvents = pgTable(
  'envelope_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    envelopeId: uuid('envelope_id')
      .notNull()
      .references(() => envelopes.id),
    /** DOCUMENT_SENT, DOCUMENT_VIEWED, DOCUMENT_SIGNED, DOCUMENT_COMPLETED, DOCUMENT_REJECTED, DOCUMENT_EXPIRED, DOCUMENT_CANCELLED */
    eventType: text('event_type').notNull(),
    recipientEmail: text('recipient_email'),
    /** A hand-over's particulars (RECIPIENT_REASSIGNED, RECIPIENT_DELEGATED): who from, who to, by whom. */
    details: jsonb('details').$type<EventDetails>(),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('envelope_events_envelope_idx').on(t.envelopeId, t.id)],
);

/** One row per envelope that ended without completing: the unique index makes the refund exactly-once. */
export const refunds = pgTable(
  'refunds',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    envelopeId: uuid('envelope_id')
      .notNull()
      .references(() => envelopes.id),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    amountMicros: bigint('amount_micros', { mode: 'bigint' }).notNull(),
    status: text('status', { enum: ['pending', 'succeeded', 'failed'] }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    ledgerEntryId: uuid('ledger_entry_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('refunds_envelope_idx').on(t.envelopeId), index('refunds_status_idx').on(t.status)],
);
