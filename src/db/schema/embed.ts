import { index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { customers } from './customers.js';
import { envelopes } from './envelopes.js';

/**
 * A recipient's embed link: a link token (lib/link-tokens.ts, purpose `embed-link`) of which only the
 * hash is kept. Short-lived and single use: the first open sets `openedAt`, and a second open of the
 * same URL shows nothing, so a URL that leaks from the customer's page after use opens nothing.
 */
export const embedLinks = pgTable(
  'embed_links',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    envelopeId: uuid('envelope_id')
      .notNull()
      .references(() => envelopes.id, { onDelete: 'cascade' }),
    engineRecipientId: text('engine_recipient_id').notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    openedAt: timestamp('opened_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('embed_links_envelope_idx').on(t.envelopeId), index('embed_links_expires_at_idx').on(t.expiresAt)],
);
