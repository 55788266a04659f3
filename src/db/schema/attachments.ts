import { bigint, index, integer, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { engineDocuments, engineFields, engineRecipients } from './engine.js';

/**
 * Files signers attached to FILE fields (issue 37): one per field, replaced while the recipient has
 * not acted. The bytes are a blob under the document's prefix (documents/<documentId>/attachments/),
 * checked and decoded in the sandbox before they were stored; the row keeps what the API lists and the
 * certificate prints. Retention's purge deletes the blob with the document's other files.
 */
export const engineAttachments = pgTable(
  'engine_attachments',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => engineDocuments.id),
    recipientId: bigint('recipient_id', { mode: 'number' })
      .notNull()
      .references(() => engineRecipients.id),
    fieldId: bigint('field_id', { mode: 'number' })
      .notNull()
      .references(() => engineFields.id),
    blobKey: text('blob_key').notNull(),
    /** The uploader's file name, sanitised (no path, no control characters, at most 120 characters). */
    name: text('name').notNull(),
    /** application/pdf, image/png or image/jpeg: what the bytes are, checked. */
    contentType: text('content_type').notNull(),
    size: integer('size').notNull(),
    sha256: text('sha256').notNull(),
    uploadedAt: timestamp('uploaded_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('engine_attachments_field_idx').on(t.fieldId), index('engine_attachments_document_idx').on(t.documentId)],
);
