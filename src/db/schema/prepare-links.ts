import { index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';
import { envelopes } from './envelopes.js';

/**
 * A prepare link: the field editor for one draft without a dashboard session, minted by the API for a
 * customer's own app. The token is derived from `salt` as signing links are (lib/link-tokens.ts) and
 * looked up by its hash; it opens only its draft, only until `expiresAt`, only while the draft is a DRAFT.
 */
export const prepareLinks = pgTable(
  'prepare_links',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    mode: text('mode', { enum: ['live', 'test'] }).notNull(),
    envelopeId: uuid('envelope_id')
      .notNull()
      .references(() => envelopes.id),
    salt: text('salt').notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('prepare_links_envelope_idx').on(t.envelopeId)],
);
