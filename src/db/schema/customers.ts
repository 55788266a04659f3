import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';

export const customers = pgTable(
  'customers',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    email: text('email').notNull(),
    /**
     * Whether `email` was proven to belong to whoever made the account: an emailed sign-in link, an
     * OpenID provider that marked it verified, or the operator. Only a verified address names an
     * account that a sign-in of that address reaches; an unverified one (some providers let anyone
     * type any address) stays on its own account, so it can never be a trap for the address's owner.
     */
    emailVerified: boolean('email_verified').notNull().default(false),
    name: text('name').notNull(),
    /** Prepaid balance in micros (USD 1 = 1,000,000). Never negative: the CHECK backs the conditional debit. */
    balanceMicros: bigint('balance_micros', { mode: 'bigint' }).notNull().default(sql`0`),
    sandboxUsed: integer('sandbox_used').notNull().default(0),
    sandboxLimit: integer('sandbox_limit').notNull(),
    /**
     * The wallet that signs in as this customer (SIWE), lower-case `0x` + 40 hex; null for a customer
     * made by the operator. Unique: one wallet is one customer. The CHECK keeps a checksummed spelling
     * from creating a second customer for the same wallet.
     */
    walletAddress: text('wallet_address').unique(),
    /** What a recipient agrees to before acting (electronic records and signatures); null: the built-in text. */
    consentText: text('consent_text'),
    /** Where the sender's notices go (completed, declined, expired); null: the account's email. */
    notificationEmail: text('notification_email'),
    /** Whether the sender gets those notices at all (opt-out per account). */
    senderNotifications: boolean('sender_notifications').notNull().default(true),
    /** The language of recipients who have none of their own (src/i18n/locales.ts); null: the browser's, else English. */
    defaultLocale: text('default_locale'),
    /** Origins whose pages may frame this account's embed links (the embed page's frame-ancestors); empty: none may. */
    allowedOrigins: text('allowed_origins').array().notNull().default(sql`'{}'::text[]`),
    /** `#rrggbb` for the signing page's primary buttons and the invitation's button; null: Signet's own. */
    brandColor: text('brand_color'),
    /** The logo's blob key, `brand/<sha256>.<png|jpg>` (content-addressed, see account/logo.ts); null: none. */
    logoKey: text('logo_key'),
    /** Automatic reminders of envelopes created without `reminders` of their own; null: none. */
    reminderDefaults: jsonb('reminder_defaults').$type<{ firstAfterDays: number; everyDays: number; max: number }>(),
    /** Days before expiresAt to warn whoever must still act, for envelopes created without their own; null: no warning. */
    expiryWarningDays: integer('expiry_warning_days'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('customers_balance_non_negative', sql`${t.balanceMicros} >= 0`),
    check('customers_sandbox_used_non_negative', sql`${t.sandboxUsed} >= 0`),
    check('customers_wallet_address_lower_hex', sql`${t.walletAddress} ~ '^0x[0-9a-f]{40}$'`),
    index('customers_email_idx').on(t.email),
  ],
);

export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    mode: text('mode', { enum: ['live', 'test'] }).notNull(),
    /** SHA-256 of the whole key, hex. The key itself is shown once and never stored. */
    keyHash: text('key_hash').notNull().unique(),
    /** Display prefix, e.g. `svc_live_1a2b3c4d`, enough to tell keys apart. */
    prefix: text('prefix').notNull(),
    /** The holder's own name for the key ("CI", "staging"): up to 60 characters, no control characters. */
    label: text('label'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    /** Written at most once a minute per key and process (the auth hot path must not write on every call). */
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
  },
  (t) => [index('api_keys_customer_idx').on(t.customerId)],
);

/** The products a customer enrolled in; enabling is idempotent, so the pair is the key. */
export const customerProducts = pgTable(
  'customer_products',
  {
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    product: text('product').notNull(),
    enabledAt: timestamp('enabled_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.customerId, t.product] })],
);
