import { and, asc, eq, inArray, isNull, or, sql, type SQL } from 'drizzle-orm';
import { rowsOf, type DbOrTx } from '../../db/client.js';
import type { Placement } from '../../pdf/types.js';
import type { FieldRules } from '../field-rules.js';
import { companionCtes, executePrepared, preparedPer } from '../../db/prepared.js';
import { engineAttachments, engineDocuments, engineEvents, engineFields, engineRecipients } from '../../db/schema/index.js';
import { actedCount, LIVE_STATUSES } from './document-views.js';
import { progressKey } from './local-engine.js';

export type DocumentRow = typeof engineDocuments.$inferSelect;
export type RecipientRow = typeof engineRecipients.$inferSelect;
export type FieldRow = typeof engineFields.$inferSelect;
export type AttachmentRow = typeof engineAttachments.$inferSelect;

/** A new document's recipient, by position; its fields name it by that position. */
export type NewRecipient = Pick<RecipientRow, 'position' | 'email' | 'name' | 'role' | 'signingOrder' | 'linkSalt' | 'tokenHash' | 'verificationRequired' | 'locale'>;
export type NewField = Pick<FieldRow, 'type' | 'page' | 'x' | 'y' | 'width' | 'height' | 'required' | 'options' | 'hide'> & { recipientPosition: number };
export type NewDocument = Pick<DocumentRow, 'id' | 'status' | 'title' | 'originalKey' | 'sha256' | 'pages' | 'testSend' | 'meta' | 'expiresAt'>;

/** A document's state and each of its recipients' (by position), with what a recipient's link is derived from. */
export type DocumentStatusRow = {
  status: string;
  completedAt: Date | null;
  recipients: Pick<RecipientRow, 'id' | 'email' | 'role' | 'status' | 'readStatus' | 'sendStatus' | 'viewedAt' | 'signedAt' | 'rejectedAt' | 'rejectionReason' | 'consentedAt' | 'linkSalt' | 'tokenHash'>[];
};

/** What a status read selects of each recipient: DocumentStatusRow's. */
const STATUS_RECIPIENT = {
  id: engineRecipients.id,
  email: engineRecipients.email,
  role: engineRecipients.role,
  status: engineRecipients.status,
  readStatus: engineRecipients.readStatus,
  sendStatus: engineRecipients.sendStatus,
  viewedAt: engineRecipients.viewedAt,
  signedAt: engineRecipients.signedAt,
  rejectedAt: engineRecipients.rejectedAt,
  rejectionReason: engineRecipients.rejectionReason,
  consentedAt: engineRecipients.consentedAt,
  linkSalt: engineRecipients.linkSalt,
  tokenHash: engineRecipients.tokenHash,
};

export function createLocalEngineRepo() {
  // Every live status read runs it: prepared once per executor (db/prepared.ts).
  const documentStatusStmt = preparedPer((db) =>
    db
      .select({
        status: engineDocuments.status,
        completedAt: engineDocuments.completedAt,
        recipient: STATUS_RECIPIENT,
      })
      .from(engineDocuments)
      .leftJoin(engineRecipients, eq(engineRecipients.documentId, engineDocuments.id))
      .where(eq(engineDocuments.id, sql.placeholder('id')))
      .orderBy(asc(engineRecipients.position))
      .prepare('engine_document_status'),
  );
  // A send, a signature and every other state change read these in a new transaction each: built once (db/prepared.ts).
  const documentStmt = preparedPer((db) => db.select().from(engineDocuments).where(eq(engineDocuments.id, sql.placeholder('id'))).prepare('engine_document'));
  const documentLockedStmt = preparedPer((db) => db.select().from(engineDocuments).where(eq(engineDocuments.id, sql.placeholder('id'))).for('update').prepare('engine_document_for_update'));
  const recipientsStmt = preparedPer((db) =>
    db.select().from(engineRecipients).where(eq(engineRecipients.documentId, sql.placeholder('id'))).orderBy(asc(engineRecipients.position)).prepare('engine_recipients_of_document'),
  );

  return {
    /**
     * A new document with its recipients, fields and CREATED event in one statement (data-modifying
     * CTEs; the fields find their recipient's id by position). Recipients and fields travel as one
     * JSON parameter each, so the statement's text is the same for any number of them.
     * Answers the ids the database chose: recipients by position, fields in the order given (they are
     * inserted in that order, so their bigserial ids ascend with it).
     */
    async insertDocumentTree(tx: DbOrTx, doc: NewDocument, recipients: NewRecipient[], fields: NewField[]): Promise<{ numericId: number; recipientIds: Map<number, number>; fieldIds: number[] }> {
      const result = await executePrepared(tx, sql`
        WITH d AS (
          INSERT INTO engine_documents (id, status, title, original_key, sha256, pages, test_send, meta, expires_at)
          VALUES (${doc.id}, ${doc.status}, ${doc.title}, ${doc.originalKey}, ${doc.sha256}, ${JSON.stringify(doc.pages)}::jsonb, ${doc.testSend}, ${JSON.stringify(doc.meta)}::jsonb, ${doc.expiresAt.toISOString()}::timestamptz)
          RETURNING numeric_id
        ), e AS (
          INSERT INTO engine_events (document_id, event) VALUES (${doc.id}, 'CREATED')
        ), r AS (
          INSERT INTO engine_recipients (document_id, position, email, name, role, signing_order, link_salt, token_hash, verification_required, locale)
          SELECT ${doc.id}, x.position, x.email, x.name, x.role, x.signing_order, x.link_salt, x.token_hash, x.verification_required, x.locale
          FROM jsonb_to_recordset(${JSON.stringify(recipients.map(recipientJson))}::jsonb)
            AS x(position int, email text, name text, role text, signing_order int, link_salt text, token_hash text, verification_required boolean, locale text)
          RETURNING id, position
        ), f AS (
          INSERT INTO engine_fields (document_id, recipient_id, type, page, x, y, width, height, required, options, hide)
          SELECT ${doc.id}, r.id, x.type, x.page, x.x, x.y, x.width, x.height, x.required, x.options, x.hide
          FROM jsonb_to_recordset(${JSON.stringify(fields.map(fieldJson))}::jsonb)
            AS x(recipient_position int, type text, page int, x float8, y float8, width float8, height float8, required boolean, options jsonb, hide jsonb, n int)
          JOIN r ON r.position = x.recipient_position
          ORDER BY x.n
          RETURNING id
        )
        SELECT (SELECT numeric_id FROM d)::text AS numeric_id,
               (SELECT coalesce(json_agg(json_build_array(position, id)), '[]') FROM r) AS recipients,
               (SELECT coalesce(json_agg(id ORDER BY id), '[]') FROM f) AS fields`);
      const [row] = rowsOf<{ numeric_id: string; recipients: [number, number][]; fields: number[] }>(result);
      if (row.fields.length !== fields.length) throw new Error(`inserted ${row.fields.length} of ${fields.length} fields: a field names no recipient`);
      return { numericId: Number(row.numeric_id), recipientIds: new Map(row.recipients), fieldIds: row.fields };
    },

    /** What a link is derived from: each recipient's salt, and whether its token's hash is stored yet. */
    async linkSalts(tx: DbOrTx, recipientIds: number[]): Promise<{ id: number; linkSalt: string; tokenHash: string | null }[]> {
      if (recipientIds.length === 0) return [];
      return tx
        .select({ id: engineRecipients.id, linkSalt: engineRecipients.linkSalt, tokenHash: engineRecipients.tokenHash })
        .from(engineRecipients)
        .where(inArray(engineRecipients.id, recipientIds));
    },

    /** Stores the hash of a migrated recipient's first new link (a no-op once it is there). */
    async fillTokenHash(tx: DbOrTx, recipientId: number, tokenHash: string): Promise<void> {
      await tx.update(engineRecipients).set({ tokenHash }).where(and(eq(engineRecipients.id, recipientId), isNull(engineRecipients.tokenHash)));
    },

    /** A new salt and its token's hash; the old link, and any pre-migration link, stop working. */
    async replaceLinkSalt(tx: DbOrTx, recipientId: number, linkSalt: string, tokenHash: string): Promise<void> {
      await tx.update(engineRecipients).set({ linkSalt, tokenHash, legacyTokenHash: null }).where(eq(engineRecipients.id, recipientId));
    },

    /**
     * Of the given blob keys of these documents, the ones a row references: a document's original or
     * sealed PDF, a recipient's signature image (which the signed fields' values name too), and, while
     * the document is live, the current version of the document as it stands (document-views.ts).
     */
    async referencedBlobKeys(tx: DbOrTx, documentIds: string[]): Promise<Set<string>> {
      if (documentIds.length === 0) return new Set();
      const [docs, recipients] = await Promise.all([
        tx
          .select({ id: engineDocuments.id, status: engineDocuments.status, originalKey: engineDocuments.originalKey, signedKey: engineDocuments.signedKey })
          .from(engineDocuments)
          .where(inArray(engineDocuments.id, documentIds)),
        tx
          .select({ documentId: engineRecipients.documentId, status: engineRecipients.status, imageKey: sql<string | null>`${engineRecipients.signature} ->> 'imageKey'` })
          .from(engineRecipients)
          .where(inArray(engineRecipients.documentId, documentIds)),
      ]);
      const current = docs.filter((d) => LIVE_STATUSES.has(d.status)).map((d) => progressKey(d.id, actedCount(recipients.filter((r) => r.documentId === d.id))));
      const attached = await tx.select({ key: engineAttachments.blobKey }).from(engineAttachments).where(inArray(engineAttachments.documentId, documentIds));
      const keys = [...docs.flatMap((d) => [d.originalKey, d.signedKey]), ...recipients.map((r) => r.imageKey), ...current, ...attached.map((a) => a.key)];
      return new Set(keys.filter((k): k is string => Boolean(k)));
    },

    async insertFields(tx: DbOrTx, rows: (typeof engineFields.$inferInsert)[]): Promise<FieldRow[]> {
      if (rows.length === 0) return [];
      return tx.insert(engineFields).values(rows).returning();
    },

    async updateFieldPlacement(tx: DbOrTx, documentId: string, fieldId: number, p: Placement): Promise<boolean> {
      const rows = await tx.update(engineFields).set({ page: p.page, x: p.x, y: p.y, width: p.width, height: p.height }).where(and(eq(engineFields.documentId, documentId), eq(engineFields.id, fieldId))).returning({ id: engineFields.id });
      return rows.length > 0;
    },

    /** Writes the rules of fields just inserted (their conditions name ids the insert chose), in one statement. */
    async setFieldRules(tx: DbOrTx, rows: { id: number; rules: FieldRules }[]): Promise<void> {
      if (rows.length === 0) return;
      await tx.execute(sql`UPDATE engine_fields SET rules = x.rules FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS x(id bigint, rules jsonb) WHERE engine_fields.id = x.id`);
    },

    /** The fields of a document whose condition names this field. */
    async dependentFields(tx: DbOrTx, documentId: string, fieldId: number): Promise<number[]> {
      const rows = await tx.select({ id: engineFields.id }).from(engineFields).where(and(eq(engineFields.documentId, documentId), sql`(${engineFields.rules} -> 'visibleWhen' ->> 'fieldId')::bigint = ${fieldId}`));
      return rows.map((r) => r.id);
    },

    async deleteField(tx: DbOrTx, documentId: string, fieldId: number): Promise<boolean> {
      const rows = await tx.delete(engineFields).where(and(eq(engineFields.documentId, documentId), eq(engineFields.id, fieldId))).returning({ id: engineFields.id });
      return rows.length === 1;
    },

    async document(tx: DbOrTx, id: string, lock = false): Promise<DocumentRow | undefined> {
      const [row] = await (lock ? documentLockedStmt : documentStmt)(tx).execute({ id });
      return row;
    },

    /** The live status of a document in one statement; undefined when there is no such document. */
    async documentStatus(db: DbOrTx, id: string): Promise<DocumentStatusRow | undefined> {
      const rows = await documentStatusStmt(db).execute({ id });
      if (rows.length === 0) return undefined;
      return { status: rows[0].status, completedAt: rows[0].completedAt, recipients: rows.flatMap((r) => (r.recipient ? [r.recipient] : [])) };
    },

    async recipients(tx: DbOrTx, documentId: string): Promise<RecipientRow[]> {
      return recipientsStmt(tx).execute({ id: documentId });
    },

    async recipientByTokenHash(tx: DbOrTx, tokenHash: string): Promise<RecipientRow | undefined> {
      // A link issued before migration 0003 is still accepted by its own hash until revoked.
      const [row] = await tx.select().from(engineRecipients).where(or(eq(engineRecipients.tokenHash, tokenHash), eq(engineRecipients.legacyTokenHash, tokenHash)));
      return row;
    },

    async fields(tx: DbOrTx, documentId: string): Promise<FieldRow[]> {
      return tx.select().from(engineFields).where(eq(engineFields.documentId, documentId)).orderBy(asc(engineFields.id));
    },

    async updateDocument(tx: DbOrTx, id: string, set: Partial<typeof engineDocuments.$inferInsert>): Promise<void> {
      await tx.update(engineDocuments).set({ ...set, updatedAt: sql`now()` }).where(eq(engineDocuments.id, id));
    },

    /**
     * The document SENT (with the send's meta and mode when given) and its SENT event, in one statement;
     * `also` (the invitations' writes) rides along as CTEs.
     */
    async markSent(tx: DbOrTx, id: string, set: { meta?: DocumentRow['meta']; testSend?: boolean }, also: SQL[] = []): Promise<void> {
      await executePrepared(tx, sql`
        WITH sent AS (
          UPDATE engine_documents
          SET status = 'SENT', meta = coalesce(${set.meta === undefined ? null : JSON.stringify(set.meta)}::jsonb, meta),
              test_send = coalesce(${set.testSend ?? null}::boolean, test_send), updated_at = now()
          WHERE id = ${id}
          RETURNING id
        ), ev AS (
          INSERT INTO engine_events (document_id, event) SELECT id, 'SENT' FROM sent
        )${companionCtes(also)}
        SELECT 1`);
    },

    async updateRecipient(tx: DbOrTx, id: number, set: Partial<typeof engineRecipients.$inferInsert>): Promise<void> {
      await tx.update(engineRecipients).set(set).where(eq(engineRecipients.id, id));
    },

    /** The UPDATE that marks recipients invited (or reminded) now; the ids travel as one JSON parameter. */
    notifiedStatement(ids: number[]): SQL {
      return sql`UPDATE engine_recipients SET notified_at = ${new Date().toISOString()}::timestamptz, send_status = 'SENT'
        WHERE id IN (SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)::int)`;
    },

    /** Writes that belong together (an invitation's job and its recipient's mark) in one statement. */
    async together(tx: DbOrTx, statements: SQL[]): Promise<void> {
      if (statements.length === 0) return;
      await executePrepared(tx, sql`WITH ${sql.join(statements.map((c, i) => sql`${sql.raw(`c${i}`)} AS (${c})`), sql`, `)} SELECT 1`);
    },

    async setFieldValue(tx: DbOrTx, fieldId: number, value: string | null): Promise<void> {
      await tx.update(engineFields).set({ value }).where(eq(engineFields.id, fieldId));
    },

    async insertEvent(tx: DbOrTx, e: typeof engineEvents.$inferInsert): Promise<void> {
      await tx.insert(engineEvents).values(e);
    },

    async events(tx: DbOrTx, documentId: string) {
      return tx.select().from(engineEvents).where(eq(engineEvents.documentId, documentId)).orderBy(asc(engineEvents.id));
    },

    /** A document's signer attachments, oldest upload first. */
    async attachments(tx: DbOrTx, documentId: string): Promise<AttachmentRow[]> {
      return tx.select().from(engineAttachments).where(eq(engineAttachments.documentId, documentId)).orderBy(asc(engineAttachments.uploadedAt), asc(engineAttachments.id));
    },

    /** Stores a FILE field's attachment, replacing the one before (answered, so its blob can go after the commit). */
    async putAttachment(tx: DbOrTx, row: Omit<AttachmentRow, 'id' | 'uploadedAt'>): Promise<{ attachment: AttachmentRow; replaced: AttachmentRow | undefined }> {
      const [replaced] = await tx.delete(engineAttachments).where(eq(engineAttachments.fieldId, row.fieldId)).returning();
      const [attachment] = await tx.insert(engineAttachments).values(row).returning();
      return { attachment, replaced };
    },

    /** How many uploads this recipient made (each is an ATTACHMENT_UPLOADED event): bounds the sandbox work one link can cause. */
    async uploadCount(tx: DbOrTx, recipientId: number): Promise<number> {
      const [row] = await tx.select({ n: sql<number>`count(*)::int` }).from(engineEvents).where(and(eq(engineEvents.recipientId, recipientId), eq(engineEvents.event, 'ATTACHMENT_UPLOADED')));
      return row?.n ?? 0;
    },
  };
}

export type LocalEngineRepo = ReturnType<typeof createLocalEngineRepo>;

const recipientJson = (r: NewRecipient) => ({ position: r.position, email: r.email, name: r.name, role: r.role, signing_order: r.signingOrder, link_salt: r.linkSalt, token_hash: r.tokenHash, verification_required: r.verificationRequired, locale: r.locale });
const fieldJson = (f: NewField, n: number) => ({ n, recipient_position: f.recipientPosition, type: f.type, page: f.page, x: f.x, y: f.y, width: f.width, height: f.height, required: f.required, options: f.options ?? null, hide: f.hide ?? null });
