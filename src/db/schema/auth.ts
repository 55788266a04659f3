import { index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/**
 * Wallet sign-in (SIWE) challenges. Only the SHA-256 of the nonce is stored, so a database read does not
 * hand out usable nonces. A nonce is single-use: verify sets used_at with a conditional UPDATE (one
 * winner among concurrent verifies); expired rows are purged by a periodic task.
 * created_at is the message's issuedAt and expires_at its expirationTime: verify rebuilds the exact
 * message the wallet signed from them.
 */
export const walletNonces = pgTable(
  'wallet_nonces',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    nonceHash: text('nonce_hash').notNull().unique(),
    /** Lower-case `0x` + 40 hex. */
    walletAddress: text('wallet_address').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('wallet_nonces_expires_idx').on(t.expiresAt)],
);
