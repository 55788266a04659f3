import { bigint, bigserial, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { engineDocuments, engineRecipients } from './engine.js';

/**
 * Each time a recipient's place on a document passed to another person: the sender replaced them
 * (reassignment) or they handed it on themselves (delegation). The recipient row then holds the new
 * person; these rows keep who held it before, for the certificate, the bounds and the old link.
 */
export const engineHandovers = pgTable(
  'engine_handovers',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => engineDocuments.id),
    /** The recipient's place (its row, which now holds the new person). */
    recipientId: bigint('recipient_id', { mode: 'number' })
      .notNull()
      .references(() => engineRecipients.id),
    fromName: text('from_name').notNull(),
    fromEmail: text('from_email').notNull(),
    toName: text('to_name').notNull(),
    toEmail: text('to_email').notNull(),
    /** sender: reassigned through the API; recipient: delegated from the signing page. */
    by: text('by', { enum: ['sender', 'recipient'] }).notNull(),
    reason: text('reason'),
    /**
     * A delegation keeps the SHA-256 of the delegator's link, so that link answers "handed to someone
     * else" (410) rather than an unknown link. Null for a reassignment: that link is simply revoked.
     */
    oldTokenHash: text('old_token_hash'),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('engine_handovers_document_idx').on(t.documentId, t.recipientId), uniqueIndex('engine_handovers_old_token_idx').on(t.oldTokenHash)],
);
