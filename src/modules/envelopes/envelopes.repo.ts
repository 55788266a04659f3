import { and, asc, count, desc, eq, inArray, isNull, like, lt, sql, type SQL } from 'drizzle-orm';
import { rowsOf, type DbOrTx } from '../../db/client.js';
import { companionCtes, executePrepared, preparedPer } from '../../db/prepared.js';
import { envelopeEvents, envelopeFields, envelopeRecipients, envelopes } from '../../db/schema/index.js';

export type EnvelopeRow = typeof envelopes.$inferSelect;
export type StoredRecipientRow = typeof envelopeRecipients.$inferSelect;
export type StoredFieldRow = typeof envelopeFields.$inferSelect;
export type EventRow = typeof envelopeEvents.$inferSelect;

export type Owner = { customerId: string; mode: 'live' | 'test' };

const owned = (id: string, o: Owner) => and(eq(envelopes.id, id), eq(envelopes.customerId, o.customerId), eq(envelopes.mode, o.mode));

/** What a sync writes of a stored recipient: its whole state as the engine reports it. */
export type RecipientState = Pick<StoredRecipientRow, 'signingStatus' | 'readStatus' | 'sendStatus' | 'status' | 'signedAt' | 'viewedAt' | 'rejectedAt' | 'rejectionReason' | 'consentedAt'>;
export type NewEnvelope = Omit<EnvelopeRow, 'purgedAt' | 'createdAt' | 'updatedAt' | 'completedAt'>;
export type NewStoredRecipient = Pick<StoredRecipientRow, 'position' | 'email' | 'name' | 'role' | 'signingOrder' | 'engineRecipientId' | 'verificationRequired' | 'locale'>;
export type NewStoredField = Omit<StoredFieldRow, 'id' | 'envelopeId' | 'rules' | 'options'> & { rules?: StoredFieldRow['rules']; options?: StoredFieldRow['options'] };

/** A stored recipient as created: nobody has opened, signed or rejected anything yet. */
const FRESH_RECIPIENT = { signingStatus: 'NOT_SIGNED', readStatus: 'NOT_OPENED', sendStatus: 'NOT_SENT', status: 'PENDING', signedAt: null, viewedAt: null, rejectedAt: null, rejectionReason: null, consentedAt: null } as const;

export function createEnvelopesRepo() {
  // Every live status read runs it: prepared once per executor (db/prepared.ts).
  const withRecipientsStmt = preparedPer((db) =>
    db
      .select({ envelope: envelopes, recipient: envelopeRecipients })
      .from(envelopes)
      .leftJoin(envelopeRecipients, eq(envelopeRecipients.envelopeId, envelopes.id))
      .where(and(eq(envelopes.id, sql.placeholder('id')), eq(envelopes.customerId, sql.placeholder('customerId')), eq(envelopes.mode, sql.placeholder('mode'))))
      .orderBy(asc(envelopeRecipients.position))
      .prepare('envelope_with_recipients'),
  );
  // The distribution job and every state change read these in a new transaction each: built once (db/prepared.ts).
  const byIdStmt = preparedPer((db) => db.select().from(envelopes).where(eq(envelopes.id, sql.placeholder('id'))).prepare('envelope_by_id'));
  const byIdLockedStmt = preparedPer((db) => db.select().from(envelopes).where(eq(envelopes.id, sql.placeholder('id'))).for('update').prepare('envelope_by_id_for_update'));
  const recipientsOfOneStmt = preparedPer((db) =>
    db.select().from(envelopeRecipients).where(eq(envelopeRecipients.envelopeId, sql.placeholder('id'))).orderBy(asc(envelopeRecipients.position)).prepare('envelope_recipients_of_one'),
  );

  return {
    /**
     * A new envelope with its recipients and fields in one statement (data-modifying CTEs; the
     * recipients and fields travel as one JSON parameter each). Every column is written from the given
     * rows, so the rows answered are the ones given plus what the database chose: ids and timestamps.
     * Fields are inserted in the order given, so their bigserial ids ascend with it.
     */
    async insertTree(
      tx: DbOrTx,
      env: NewEnvelope,
      recipients: NewStoredRecipient[],
      fields: NewStoredField[],
      companions: SQL[] = [],
    ): Promise<{ envelope: EnvelopeRow; recipients: StoredRecipientRow[]; fields: StoredFieldRow[] }> {
      const fresh = FRESH_RECIPIENT;
      // Other modules' writes of the same change (its audit row, its job) ride along: no round trip of their own.
      const also = companionCtes(companions);
      const result = await executePrepared(tx, sql`
        WITH e AS (
          INSERT INTO envelopes (id, customer_id, mode, engine_envelope_id, engine_numeric_id, status, title, meta, test_send, document_sha256, page_count, detected_from_placeholders, charged_micros, expires_at, storage_expiry_days, storage_expires_at)
          VALUES (${env.id}, ${env.customerId}, ${env.mode}, ${env.engineEnvelopeId}, ${env.engineNumericId}, ${env.status}, ${env.title}, ${JSON.stringify(env.meta)}::jsonb, ${env.testSend}, ${env.documentSha256}, ${env.pageCount}, ${env.detectedFromPlaceholders}, ${env.chargedMicros.toString()}::bigint, ${env.expiresAt.toISOString()}::timestamptz, ${env.storageExpiryDays}, ${env.storageExpiresAt.toISOString()}::timestamptz)
          RETURNING created_at, updated_at
        ), r AS (
          INSERT INTO envelope_recipients (envelope_id, position, email, name, role, signing_order, engine_recipient_id, verification_required, locale, signing_status, read_status, send_status, status)
          SELECT ${env.id}, x.position, x.email, x.name, x.role, x.signing_order, x.engine_recipient_id, x.verification_required, x.locale, ${fresh.signingStatus}, ${fresh.readStatus}, ${fresh.sendStatus}, ${fresh.status}
          FROM jsonb_to_recordset(${JSON.stringify(recipients.map(recipientJson))}::jsonb)
            AS x(position int, email text, name text, role text, signing_order int, engine_recipient_id text, verification_required boolean, locale text)
          RETURNING id, position
        ), f AS (
          INSERT INTO envelope_fields (envelope_id, engine_field_id, recipient_email, type, page, x, y, width, height, options, rules)
          SELECT ${env.id}, x.engine_field_id, x.recipient_email, x.type, x.page, x.x, x.y, x.width, x.height, x.options, x.rules
          FROM jsonb_to_recordset(${JSON.stringify(fields.map(fieldJson))}::jsonb)
            AS x(engine_field_id bigint, recipient_email text, type text, page int, x float8, y float8, width float8, height float8, options jsonb, rules jsonb, n int)
          ORDER BY x.n
          RETURNING id
        )${also}
        SELECT (SELECT json_build_array(created_at, updated_at) FROM e) AS at,
               (SELECT coalesce(json_agg(json_build_array(position, id)), '[]') FROM r) AS recipients,
               (SELECT coalesce(json_agg(id ORDER BY id), '[]') FROM f) AS fields`);
      const [row] = rowsOf<{ at: [string, string]; recipients: [number, number][]; fields: number[] }>(result);
      const recipientIds = new Map(row.recipients);
      return {
        envelope: { ...env, purgedAt: null, createdAt: new Date(row.at[0]), updatedAt: new Date(row.at[1]), completedAt: null },
        recipients: recipients.map((r) => ({ ...r, ...fresh, id: recipientIds.get(r.position)!, envelopeId: env.id })),
        fields: fields.map((f, i) => ({ ...f, rules: f.rules ?? null, options: f.options ?? null, id: row.fields[i], envelopeId: env.id })),
      };
    },

    /** Scoped by owner inside the query; `lock` serializes every state change of one envelope. */
    async find(tx: DbOrTx, id: string, owner: Owner, lock = false): Promise<EnvelopeRow | undefined> {
      const q = tx.select().from(envelopes).where(owned(id, owner));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    /** The envelope (scoped by owner inside the query) with its stored recipients by position, in one statement; never locks. */
    async findWithRecipients(db: DbOrTx, id: string, owner: Owner): Promise<{ envelope: EnvelopeRow; recipients: StoredRecipientRow[] } | undefined> {
      const rows = await withRecipientsStmt(db).execute({ id, customerId: owner.customerId, mode: owner.mode });
      if (rows.length === 0) return undefined;
      return { envelope: rows[0].envelope, recipients: rows.flatMap((r) => (r.recipient ? [r.recipient] : [])) };
    },

    /** `lock: 'skip'`: locked unless another transaction holds it (then undefined: a sweep comes back later). */
    async findByEngineId(tx: DbOrTx, engineEnvelopeId: string, lock: boolean | 'skip' = false): Promise<EnvelopeRow | undefined> {
      const q = tx.select().from(envelopes).where(eq(envelopes.engineEnvelopeId, engineEnvelopeId));
      const [row] = lock ? await q.for('update', lock === 'skip' ? { skipLocked: true } : {}) : await q;
      return row;
    },

    async findById(tx: DbOrTx, id: string, lock = false): Promise<EnvelopeRow | undefined> {
      const [row] = await (lock ? byIdLockedStmt : byIdStmt)(tx).execute({ id });
      return row;
    },

    async update(tx: DbOrTx, id: string, set: Partial<typeof envelopes.$inferInsert>): Promise<void> {
      await tx.update(envelopes).set({ ...set, updatedAt: sql`now()` }).where(eq(envelopes.id, id));
    },

    async list(tx: DbOrTx, owner: Owner, filter: { status?: string }, page: { limit: number; offset: number }) {
      const where = and(eq(envelopes.customerId, owner.customerId), eq(envelopes.mode, owner.mode), filter.status ? eq(envelopes.status, filter.status) : undefined);
      const [rows, [{ total }]] = await Promise.all([
        tx.select().from(envelopes).where(where).orderBy(desc(envelopes.createdAt), desc(envelopes.id)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(envelopes).where(where),
      ]);
      return { rows, total };
    },

    async recipients(tx: DbOrTx, envelopeIds: string[]): Promise<StoredRecipientRow[]> {
      if (envelopeIds.length === 0) return [];
      if (envelopeIds.length === 1) return recipientsOfOneStmt(tx).execute({ id: envelopeIds[0] });
      return tx.select().from(envelopeRecipients).where(inArray(envelopeRecipients.envelopeId, envelopeIds)).orderBy(asc(envelopeRecipients.position));
    },

    /** The engine envelope ids fronting these engine recipients (a remote engine reads links by envelope). */
    async engineEnvelopeIdsOfRecipients(tx: DbOrTx, engineRecipientIds: string[]): Promise<string[]> {
      if (engineRecipientIds.length === 0) return [];
      const rows = await tx
        .selectDistinct({ id: envelopes.engineEnvelopeId })
        .from(envelopeRecipients)
        .innerJoin(envelopes, eq(envelopes.id, envelopeRecipients.envelopeId))
        .where(inArray(envelopeRecipients.engineRecipientId, engineRecipientIds));
      return rows.map((r) => r.id);
    },

    /** Which of these engine envelope ids a row holds, whatever its state (the Documenso orphan sweep keeps those). */
    async heldEngineEnvelopeIds(db: DbOrTx, engineEnvelopeIds: string[]): Promise<Set<string>> {
      if (engineEnvelopeIds.length === 0) return new Set();
      const rows = await db.select({ id: envelopes.engineEnvelopeId }).from(envelopes).where(inArray(envelopes.engineEnvelopeId, engineEnvelopeIds));
      return new Set(rows.map((r) => r.id));
    },

    /**
     * The engine envelope id of one engine's envelope (its ids start with `idPrefix`) by the engine's
     * numeric id, which is what Documenso's webhook names. Not indexed: one lookup per callback.
     */
    async engineIdByNumericId(tx: DbOrTx, engineNumericId: string, idPrefix: string): Promise<string | undefined> {
      const where = and(eq(envelopes.engineNumericId, engineNumericId), like(envelopes.engineEnvelopeId, `${idPrefix}%`));
      const [row] = await tx.select({ id: envelopes.engineEnvelopeId }).from(envelopes).where(where).limit(1);
      return row?.id;
    },

    /**
     * What a sync found, written in one statement: the recipients' new states, the envelope's new
     * status (when it moved) and the events, answered in the order given (ids ascend with it).
     */
    async recordSync(
      tx: DbOrTx,
      envelopeId: string,
      change: { updates: { id: number; set: RecipientState }[]; status?: { status: string; completedAt: Date | null }; events: { eventType: string; recipientEmail: string | null }[] },
    ): Promise<EventRow[]> {
      const { updates, status, events } = change;
      if (updates.length === 0 && !status && events.length === 0) return [];
      const rows = updates.map(({ id, set }) => ({
        id,
        signing_status: set.signingStatus,
        read_status: set.readStatus,
        send_status: set.sendStatus,
        status: set.status,
        signed_at: set.signedAt?.toISOString() ?? null,
        viewed_at: set.viewedAt?.toISOString() ?? null,
        rejected_at: set.rejectedAt?.toISOString() ?? null,
        rejection_reason: set.rejectionReason,
        consented_at: set.consentedAt?.toISOString() ?? null,
      }));
      const result = await executePrepared(tx, sql`
        WITH r AS (
          UPDATE envelope_recipients r SET
            signing_status = x.signing_status, read_status = x.read_status, send_status = x.send_status, status = x.status,
            signed_at = x.signed_at, viewed_at = x.viewed_at, rejected_at = x.rejected_at, rejection_reason = x.rejection_reason, consented_at = x.consented_at
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
            AS x(id bigint, signing_status text, read_status text, send_status text, status text, signed_at timestamptz, viewed_at timestamptz, rejected_at timestamptz, rejection_reason text, consented_at timestamptz)
          WHERE r.id = x.id
        ), e AS (
          UPDATE envelopes SET status = ${status?.status ?? null}::text, completed_at = ${status?.completedAt?.toISOString() ?? null}::timestamptz, updated_at = now()
          WHERE id = ${envelopeId} AND ${status !== undefined}::boolean
        ), ev AS (
          INSERT INTO envelope_events (envelope_id, event_type, recipient_email)
          SELECT ${envelopeId}, x.event_type, x.recipient_email
          FROM jsonb_to_recordset(${JSON.stringify(events.map((ev, n) => ({ n, event_type: ev.eventType, recipient_email: ev.recipientEmail })))}::jsonb)
            AS x(n int, event_type text, recipient_email text)
          ORDER BY x.n
          RETURNING id, envelope_id, event_type, recipient_email, occurred_at
        )
        SELECT id, envelope_id, event_type, recipient_email, occurred_at FROM ev ORDER BY id`);
      return rowsOf<{ id: string | number; envelope_id: string; event_type: string; recipient_email: string | null; occurred_at: string | Date }>(result).map((r) => ({
        id: Number(r.id),
        envelopeId: r.envelope_id,
        eventType: r.event_type,
        recipientEmail: r.recipient_email,
        details: null,
        occurredAt: new Date(r.occurred_at),
      }));
    },

    async insertFields(tx: DbOrTx, rows: (typeof envelopeFields.$inferInsert)[]): Promise<StoredFieldRow[]> {
      if (rows.length === 0) return [];
      return tx.insert(envelopeFields).values(rows).returning();
    },

    async fields(tx: DbOrTx, envelopeIds: string[]): Promise<StoredFieldRow[]> {
      if (envelopeIds.length === 0) return [];
      return tx.select().from(envelopeFields).where(inArray(envelopeFields.envelopeId, envelopeIds)).orderBy(asc(envelopeFields.id));
    },

    async updateFieldPlacement(tx: DbOrTx, envelopeId: string, engineFieldId: number, p: { page: number; x: number; y: number; width: number; height: number }): Promise<StoredFieldRow | undefined> {
      const [row] = await tx
        .update(envelopeFields)
        .set({ page: p.page, x: p.x, y: p.y, width: p.width, height: p.height })
        .where(and(eq(envelopeFields.envelopeId, envelopeId), eq(envelopeFields.engineFieldId, engineFieldId)))
        .returning();
      return row;
    },

    async deleteField(tx: DbOrTx, envelopeId: string, engineFieldId: number): Promise<void> {
      await tx.delete(envelopeFields).where(and(eq(envelopeFields.envelopeId, envelopeId), eq(envelopeFields.engineFieldId, engineFieldId)));
    },

    async events(tx: DbOrTx, envelopeId: string): Promise<EventRow[]> {
      return tx.select().from(envelopeEvents).where(eq(envelopeEvents.envelopeId, envelopeId)).orderBy(asc(envelopeEvents.id));
    },

    /** Non-terminal envelopes whose signing window closed, the longest overdue first. */
    async dueForExpiry(tx: DbOrTx, limit: number): Promise<EnvelopeRow[]> {
      return tx
        .select()
        .from(envelopes)
        .where(and(inArray(envelopes.status, ['DRAFT', 'PENDING', 'SENT', 'PARTIALLY_SIGNED']), lt(envelopes.expiresAt, sql`now()`)))
        .orderBy(asc(envelopes.expiresAt), asc(envelopes.id))
        .limit(limit)
        .for('update', { skipLocked: true });
    },

    /** Envelopes in one of `statuses` (the terminal ones) past their retention date, the longest overdue first. */
    async dueForPurge(tx: DbOrTx, limit: number, statuses: readonly string[]): Promise<EnvelopeRow[]> {
      return tx
        .select()
        .from(envelopes)
        .where(and(isNull(envelopes.purgedAt), inArray(envelopes.status, [...statuses]), lt(envelopes.storageExpiresAt, sql`now()`)))
        .orderBy(asc(envelopes.storageExpiresAt), asc(envelopes.id))
        .limit(limit)
        .for('update', { skipLocked: true });
    },
  };
}

export type EnvelopesRepo = ReturnType<typeof createEnvelopesRepo>;

const recipientJson = (r: NewStoredRecipient) => ({ position: r.position, email: r.email, name: r.name, role: r.role, signing_order: r.signingOrder, engine_recipient_id: r.engineRecipientId, verification_required: r.verificationRequired, locale: r.locale });
const fieldJson = (f: NewStoredField, n: number) => ({ n, engine_field_id: f.engineFieldId, recipient_email: f.recipientEmail, type: f.type, page: f.page, x: f.x, y: f.y, width: f.width, height: f.height, options: f.options ?? null, rules: f.rules ?? null });
