import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * A salted scrypt fingerprint of each secret every node must share (OPS_TOKEN, JWT_SECRET,
 * SIGNING_LINK_SECRET), written by the nodes that start on this database: a node whose secret was
 * generated in its own DATA_DIR and differs from the fingerprint is refused at start
 * (modules/ops/shared-secrets.ts). Slow and salted, so the row does not help anyone guess the value.
 */
export const secretFingerprints = pgTable('secret_fingerprints', {
  name: text('name').primaryKey(),
  salt: text('salt').notNull(),
  fingerprint: text('fingerprint').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});
