import { sql } from 'drizzle-orm';
import { bigint, bigserial, boolean, doublePrecision, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import type { FieldRules } from '../../engine/field-rules.js';
import type { PageBox, Placement } from '../../pdf/types.js';

/**
 * The built-in signing engine's own tables. The envelope service never reads them directly: it goes
 * through the SigningEngine interface, exactly as it would with a remote engine.
 */
export const engineDocuments = pgTable(
  'engine_documents',
  {
  id: uuid('id').primaryKey().defaultRandom(),
  numericId: bigserial('numeric_id', { mode: 'number' }).notNull().unique(),
  status: text('status').notNull(),
  title: text('title'),
  originalKey: text('original_key').notNull(),
  signedKey: text('signed_key'),
  /** SHA-256 of the sealed PDF as we served it: how /verify-document recognises an unchanged copy. */
  sealedSha256: text('sealed_sha256'),
  /**
   * SHA-256 of what the seal's signature covers (the sealed PDF but its /Contents): how
   * /verify-document names the envelope of a copy whose signature's unsigned bytes were changed.
   */
  signedContentSha256: text('signed_content_sha256'),
  sha256: text('sha256').notNull(),
  pages: jsonb('pages').$type<PageBox[]>().notNull(),
  /** Invitations go to the outbox only (test mode). */
  testSend: boolean('test_send').notNull().default(false),
  /**
   * The caller's meta, plus `senderName` (the sending account's name, shown in the invitations) and
   * `consentText` (what its recipients agree to before acting): both copied from the account at create,
   * so what a recipient was shown, and the certificate prints, never changes with later settings.
   */
  meta: jsonb('meta')
    .$type<{ subject?: string; message?: string; redirectUrl?: string; senderName?: string; consentText?: string; delivery?: 'embedded'; brandColor?: string; logo?: string; reminders?: { firstAfterDays: number; everyDays: number; max: number }; expiryWarningDays?: number; allowDelegation?: true; defaultLocale?: string }>()
    .notNull()
    .default({}),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  completedAt: timestamp('completed_at', { withTimezone: true }),
  /** Retention deleted (or is deleting, in a job after the commit) its files: the recipient's link serves nothing from then on. */
  purgedAt: timestamp('purged_at', { withTimezone: true }),
  /**
   * When the certificate of the TSA behind the sealed file's latest timestamp expires: past it, that
   * timestamp can no longer be checked, so archival re-timestamping (SIGNING_ARCHIVE_RETIMESTAMP_DAYS)
   * adds a new one before. Null: no timestamp (B-B), or sealed before this was recorded.
   */
  archiveExpiresAt: timestamp('archive_expires_at', { withTimezone: true }),
  },
  (t) => [
    index('engine_documents_sealed_sha256_idx').on(t.sealedSha256),
    index('engine_documents_signed_content_sha256_idx').on(t.signedContentSha256),
    index('engine_documents_archive_expires_at_idx').on(t.archiveExpiresAt),
    // The reminder sweep (reminders.ts) looks only at live documents that asked for reminders or a warning.
    index('engine_documents_reminding_idx')
      .on(t.expiresAt)
      .where(sql`${t.status} IN ('SENT', 'PARTIALLY_SIGNED') AND (${t.meta} ? 'reminders' OR ${t.meta} ? 'expiryWarningDays')`),
  ],
);

/**
 * Earlier versions of a sealed file, replaced by an archival re-timestamp: each is still a file this
 * server sealed and served, so /verify-document recognises it by its hash as it does the current one.
 */
export const sealedDocumentVersions = pgTable(
  'sealed_document_versions',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => engineDocuments.id, { onDelete: 'cascade' }),
    sealedSha256: text('sealed_sha256').notNull(),
    replacedAt: timestamp('replaced_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('sealed_document_versions_sealed_sha256_idx').on(t.sealedSha256), index('sealed_document_versions_document_id_idx').on(t.documentId)],
);

export const engineRecipients = pgTable(
  'engine_recipients',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => engineDocuments.id),
    position: integer('position').notNull(),
    email: text('email').notNull(),
    name: text('name').notNull(),
    role: text('role').notNull(),
    signingOrder: integer('signing_order'),
    /**
     * SHA-256 of the signing token, HMAC(SIGNING_LINK_SECRET, linkSalt); the token itself is derived on
     * demand, never stored. Null only for a recipient migrated from the old links until its first link
     * is derived.
     */
    tokenHash: text('token_hash').unique(),
    /** Random 128-bit salt (hex) of the signing token; a new salt revokes the recipient's link. */
    linkSalt: text('link_salt').notNull(),
    /**
     * SHA-256 of the link issued before migration 0003 (an HMAC of the recipient id under JWT_SECRET),
     * still accepted until the recipient's link is revoked; null for every later recipient.
     */
    legacyTokenHash: text('legacy_token_hash').unique(),
    status: text('status').notNull().default('PENDING'),
    readStatus: text('read_status').notNull().default('NOT_OPENED'),
    sendStatus: text('send_status').notNull().default('NOT_SENT'),
    notifiedAt: timestamp('notified_at', { withTimezone: true }),
    viewedAt: timestamp('viewed_at', { withTimezone: true }),
    signedAt: timestamp('signed_at', { withTimezone: true }),
    rejectedAt: timestamp('rejected_at', { withTimezone: true }),
    rejectionReason: text('rejection_reason'),
    ip: text('ip'),
    userAgent: text('user_agent'),
    signature: jsonb('signature').$type<{ kind: 'typed' | 'drawn' | 'uploaded'; text?: string; imageKey?: string }>(),
    /** The recipient must prove control of their email address (an emailed code) before acting. */
    verificationRequired: boolean('verification_required').notNull().default(false),
    verifiedAt: timestamp('verified_at', { withTimezone: true }),
    /**
     * The recipient agreed to use electronic records and signatures (ESIGN, eIDAS): when, from where,
     * and the SHA-256 of the text they were shown. No action but declining is accepted before it.
     */
    consentedAt: timestamp('consented_at', { withTimezone: true }),
    consentIp: text('consent_ip'),
    consentUserAgent: text('consent_user_agent'),
    consentTextSha256: text('consent_text_sha256'),
    /** The IANA time zone the recipient's browser reported when consenting: the certificate shows their times in it too. */
    timeZone: text('time_zone'),
    /** The language the recipient is addressed in (src/i18n/locales.ts); null: the account's default, else the browser's. */
    locale: text('locale'),
    /** Automatic reminders sent so far (the claim compares and sets it: reminders.ts); at most the document's `max`. */
    remindersSent: integer('reminders_sent').notNull().default(0),
    /** The last automatic reminder or expiry warning: the next reminder counts from it (or from notifiedAt, the later). */
    lastRemindedAt: timestamp('last_reminded_at', { withTimezone: true }),
    /** The one expiry warning, when sent. */
    expiryWarnedAt: timestamp('expiry_warned_at', { withTimezone: true }),
  },
  (t) => [index('engine_recipients_document_idx').on(t.documentId)],
);

export const engineFields = pgTable(
  'engine_fields',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => engineDocuments.id),
    recipientId: bigint('recipient_id', { mode: 'number' })
      .notNull()
      .references(() => engineRecipients.id),
    type: text('type').notNull(),
    page: integer('page').notNull(),
    x: doublePrecision('x').notNull(),
    y: doublePrecision('y').notNull(),
    width: doublePrecision('width').notNull(),
    height: doublePrecision('height').notNull(),
    required: boolean('required').notNull().default(true),
    options: jsonb('options').$type<string[]>(),
    /** The marker's own box, covered when sealing so the marker text does not show. */
    hide: jsonb('hide').$type<Placement>(),
    /** Label, validation, the sender's value and the visibleWhen condition (engine/field-rules.ts); null: none. */
    rules: jsonb('rules').$type<FieldRules>(),
    value: text('value'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('engine_fields_document_idx').on(t.documentId)],
);

/** The engine's audit trail, printed on the certificate page. */
export const engineEvents = pgTable(
  'engine_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => engineDocuments.id),
    recipientId: integer('recipient_id'),
    event: text('event').notNull(),
    ip: text('ip'),
    userAgent: text('user_agent'),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('engine_events_document_idx').on(t.documentId)],
);
