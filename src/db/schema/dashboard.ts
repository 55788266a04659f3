import { bigint, check, index, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';
import { customers } from './customers.js';

/**
 * A signed-in dashboard browser. The cookie `svc_session` carries a random token; only its SHA-256 is
 * kept. A session ends at `expiresAt` (absolute), after an idle gap past `lastSeenAt`, or on sign-out
 * (`revokedAt`): every one of them is checked on each request, so a copied cookie dies with the row.
 */
export const dashboardSessions = pgTable(
  'dashboard_sessions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    tokenHash: text('token_hash').notNull().unique(),
    /** `oidc` or `email`: how the browser proved who it is. */
    method: text('method', { enum: ['oidc', 'email'] }).notNull(),
    ip: text('ip'),
    userAgent: text('user_agent'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('dashboard_sessions_customer_idx').on(t.customerId)],
);

/**
 * One sign-in attempt, single use: an emailed link (`email`; the link's token is derived from `linkSalt`
 * as signing links are, and looked up by its hash) or an OpenID Connect round trip (`oidc`; the browser
 * holds a random flow cookie whose hash is `tokenHash`, and the row keeps state, nonce and the PKCE
 * verifier). Rows double as the rate-limit record per address and IP, and per IP.
 */
export const dashboardSignIns = pgTable(
  'dashboard_sign_ins',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    kind: text('kind', { enum: ['email', 'oidc'] }).notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    linkSalt: text('link_salt'),
    /** Lower-cased; null for an OIDC flow until the provider names it. */
    email: text('email'),
    oidcState: text('oidc_state'),
    oidcNonce: text('oidc_nonce'),
    oidcCodeVerifier: text('oidc_code_verifier'),
    /** A /dashboard path to land on after sign-in (checked when stored and again when used). */
    returnTo: text('return_to'),
    ip: text('ip'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
  },
  (t) => [index('dashboard_sign_ins_email_idx').on(t.email, t.createdAt), index('dashboard_sign_ins_ip_idx').on(t.ip, t.createdAt)],
);

/** An OpenID Connect identity (issuer + subject) bound to the customer it signs in as. */
export const customerIdentities = pgTable(
  'customer_identities',
  {
    issuer: text('issuer').notNull(),
    subject: text('subject').notNull(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    email: text('email'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.issuer, t.subject] }), index('customer_identities_customer_idx').on(t.customerId)],
);

export const TOP_UP_STATUSES = ['pending', 'paid', 'expired'] as const;

/**
 * A card top-up through Stripe Checkout. The row is written before Stripe is called, so a Checkout
 * Session always has its row; the balance is credited when the row moves pending → paid, which happens
 * once whatever events Stripe sends (completed, async_payment_succeeded, redeliveries).
 */
export const cardTopUps = pgTable(
  'card_top_ups',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    amountMicros: bigint('amount_micros', { mode: 'bigint' }).notNull(),
    status: text('status', { enum: TOP_UP_STATUSES }).notNull().default('pending'),
    /** Stripe's Checkout Session id (cs_…), set once Stripe answered. */
    checkoutSessionId: text('checkout_session_id').unique(),
    /** The session's PaymentIntent (pi_…), set when it is paid: what a refund's or dispute's event names. */
    paymentIntentId: text('payment_intent_id').unique(),
    /**
     * After refunds and disputes (card_reversals): what was taken back from the balance, and what the
     * balance could not cover (the operator was alerted). Together they follow what Stripe holds back.
     */
    reversedMicros: bigint('reversed_micros', { mode: 'bigint' }).notNull().default(sql`0`),
    unrecoveredMicros: bigint('unrecovered_micros', { mode: 'bigint' }).notNull().default(sql`0`),
    ledgerEntryId: uuid('ledger_entry_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    paidAt: timestamp('paid_at', { withTimezone: true }),
  },
  (t) => [
    index('card_top_ups_customer_idx').on(t.customerId, t.createdAt),
    check('card_top_ups_amount_positive', sql`${t.amountMicros} > 0`),
    check('card_top_ups_reversal_within_amount', sql`${t.reversedMicros} >= 0 AND ${t.unrecoveredMicros} >= 0 AND ${t.reversedMicros} + ${t.unrecoveredMicros} <= ${t.amountMicros}`),
  ],
);
