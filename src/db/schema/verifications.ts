import { bigint, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';
import { customers } from './customers.js';

export const VERIFICATION_TYPES = ['email', 'id_document'] as const;
export const VERIFICATION_STATUSES = ['pending', 'verified', 'failed', 'expired', 'canceled'] as const;

/**
 * An identity verification: does this person control this email address (a code we send), or hold
 * this identity document (Stripe Identity)? The provider is authoritative for live status; this row
 * is the stored copy. A verification made for a gated recipient names its envelope and recipient.
 */
export const verifications = pgTable(
  'verifications',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    mode: text('mode', { enum: ['live', 'test'] }).notNull(),
    type: text('type', { enum: VERIFICATION_TYPES }).notNull(),
    status: text('status', { enum: VERIFICATION_STATUSES }).notNull().default('pending'),
    email: text('email').notNull(),
    name: text('name'),
    redirectUrl: text('redirect_url'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull().default({}),
    /** `email` (built in) or `stripe_identity`. */
    provider: text('provider').notNull(),
    /** The provider's id (Stripe's VerificationSession id); null for the built-in email provider. */
    providerRef: text('provider_ref'),
    /** The provider's hosted page (Stripe); the email provider's page is derived from the link salt. */
    providerUrl: text('provider_url'),
    /** Random salt of the /verify/{token} link (token = HMAC(SIGNING_LINK_SECRET, salt)); its SHA-256 for lookup. */
    linkSalt: text('link_salt'),
    tokenHash: text('token_hash').unique(),
    /** SHA-256 of the current emailed code (never the code); one code is live at a time. */
    codeHash: text('code_hash'),
    codeExpiresAt: timestamp('code_expires_at', { withTimezone: true }),
    codesSent: integer('codes_sent').notNull().default(0),
    lastCodeSentAt: timestamp('last_code_sent_at', { withTimezone: true }),
    failedAttempts: integer('failed_attempts').notNull().default(0),
    failureReason: text('failure_reason'),
    /** Set for a gated recipient's verification (envelope or engine recipient it unlocks). */
    envelopeId: uuid('envelope_id'),
    engineRecipientId: text('engine_recipient_id'),
    chargedMicros: bigint('charged_micros', { mode: 'bigint' }).notNull().default(sql`0`),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    verifiedAt: timestamp('verified_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('verifications_customer_created_idx').on(t.customerId, t.mode, t.createdAt),
    uniqueIndex('verifications_provider_ref_idx').on(t.provider, t.providerRef),
    index('verifications_envelope_idx').on(t.envelopeId),
    index('verifications_engine_recipient_idx').on(t.engineRecipientId),
  ],
);

/** Stripe events already applied: Stripe delivers at least once, so each event id is applied once. */
export const stripeEvents = pgTable('stripe_events', {
  id: text('id').primaryKey(),
  type: text('type').notNull(),
  receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
});
