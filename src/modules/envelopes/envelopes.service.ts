import type { DbOrTx, Tx } from '../../db/client.js';
import { TERMINAL_STATUSES, type EngineFieldInput, type EngineStatus, type EnvelopeStatus, type Role, type SigningEngine } from '../../engine/engine.js';
import type { OperatorContext, RequestContext } from '../../http/context.js';
import { AppError } from '../../http/errors.js';
import type { Paging } from '../../http/paging.js';
import { enqueue } from '../../jobs/queue.js';
import type { PreparedDocument } from '../../pdf/types.js';
import type { AuditService } from '../audit/audit.service.js';
import type { BillingService } from '../billing/billing.service.js';
import type { EnvelopesRepo, EnvelopeRow, Owner, StoredFieldRow, StoredRecipientRow } from './envelopes.repo.js';
import type { TCreatePayload, TEnvelope, TFieldInput } from './envelopes.schemas.js';
import { EVENT_NAMES, STATUS_EVENT, type EventType } from './events.js';

export const DISTRIBUTE_JOB = 'envelope.distribute';
export const REFUND_JOB = 'envelope.refund';
export const MAX_SIGNERS = 10;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DAY = 86_400_000;

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
const ownerOf = (ctx: RequestContext): Owner => ({ customerId: ctx.actor.customerId, mode: ctx.actor.mode });
const invalid = (path: string, message: string) => new AppError('VALIDATION_ERROR', `${path}: ${message}`, { details: [{ path, message }] });

export type PublishedEvent = {
  owner: Owner;
  envelopeId: string;
  eventId: number;
  event: string;
  occurredAt: Date;
  envelope: Record<string, unknown>;
  recipient: Record<string, unknown> | null;
};

export type EnvelopeServiceDeps = {
  repo: EnvelopesRepo;
  engine: SigningEngine;
  billing: Pick<BillingService, 'charge' | 'credit'>;
  audit: AuditService;
  signingUrlOf: (engineRecipientId: string) => string;
  /** Called in the transaction that records events (webhook fan-out). */
  publish?: (tx: Tx, e: PublishedEvent) => Promise<void>;
  envelopeExpiryDays: number;
  storageExpiryDays: number;
};

function fieldToEngine(f: TFieldInput, recipientEmail: string): EngineFieldInput {
  return {
    recipientEmail,
    type: f.type,
    page: f.page,
    x: f.positionXPercent ?? f.positionX!,
    y: f.positionYPercent ?? f.positionY!,
    width: f.widthPercent ?? f.width!,
    height: f.heightPercent ?? f.height!,
    required: f.required ?? !['CHECKBOX'].includes(f.type),
    options: f.options ?? null,
    hide: null,
  };
}

export function createEnvelopesService(deps: EnvelopeServiceDeps) {
  const { repo, engine } = deps;

  async function requireEnvelope(tx: DbOrTx, id: string, owner: Owner, lock = false): Promise<EnvelopeRow> {
    const row = UUID.test(id) ? await repo.find(tx, id, owner, lock) : undefined;
    if (!row) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
    return row;
  }

  function recipientDto(r: StoredRecipientRow) {
    return {
      email: r.email,
      name: r.name,
      role: r.role as Role,
      signingOrder: r.signingOrder,
      signingUrl: deps.signingUrlOf(r.engineRecipientId),
      signingStatus: r.signingStatus,
      readStatus: r.readStatus,
      sendStatus: r.sendStatus,
      status: r.status,
      signedAt: iso(r.signedAt),
      viewedAt: iso(r.viewedAt),
      rejectedAt: iso(r.rejectedAt),
      rejectionReason: r.rejectionReason,
    };
  }

  const fieldDto = (f: StoredFieldRow) => ({
    fieldId: f.engineFieldId,
    id: String(f.engineFieldId),
    type: f.type as TEnvelope['fields'][number]['type'],
    recipientEmail: f.recipientEmail,
    page: f.page,
    positionX: f.x,
    positionXPercent: f.x,
    positionY: f.y,
    positionYPercent: f.y,
    width: f.width,
    widthPercent: f.width,
    height: f.height,
    heightPercent: f.height,
  });

  async function toDto(tx: DbOrTx, rows: EnvelopeRow[], withEvents: boolean): Promise<TEnvelope[]> {
    const ids = rows.map((r) => r.id);
    const [recipients, fields] = await Promise.all([repo.recipients(tx, ids), repo.fields(tx, ids)]);
    return Promise.all(
      rows.map(async (e) => ({
        envelopeId: e.id,
        engineEnvelopeId: e.engineEnvelopeId,
        engineNumericId: e.engineNumericId,
        status: e.status as EnvelopeStatus,
        title: e.title,
        recipients: recipients.filter((r) => r.envelopeId === e.id).map(recipientDto),
        fields: fields.filter((f) => f.envelopeId === e.id).map(fieldDto),
        detectedFromPlaceholders: e.detectedFromPlaceholders,
        expiresAt: e.expiresAt.toISOString(),
        storageExpiresAt: iso(e.storageExpiresAt),
        createdAt: e.createdAt.toISOString(),
        updatedAt: e.updatedAt.toISOString(),
        completedAt: iso(e.completedAt),
        ...(withEvents
          ? {
              events: (await repo.events(tx, e.id)).map((ev) => ({
                eventType: ev.eventType,
                event: EVENT_NAMES[ev.eventType as EventType],
                recipientEmail: ev.recipientEmail,
                occurredAt: ev.occurredAt.toISOString(),
              })),
            }
          : {}),
      })),
    );
  }

  /** The recipient rules, which need no document: unique emails, one to MAX_SIGNERS signers. Returns email → index. */
  function checkRecipients(payload: TCreatePayload): Map<string, number> {
    const emails = new Map<string, number>();
    payload.recipients.forEach((r, i) => {
      const key = r.email.toLowerCase();
      if (emails.has(key)) throw invalid(`payload.recipients.${i}.email`, `duplicate recipient ${r.email}`);
      emails.set(key, i);
    });
    const signers = payload.recipients.filter((r) => r.role === 'SIGNER').length;
    if (signers === 0) throw invalid('payload.recipients', 'at least one recipient must be a SIGNER');
    if (signers > MAX_SIGNERS) throw new AppError('OUT_OF_SCOPE_V1', `At most ${MAX_SIGNERS} signers per envelope in v1`);
    return emails;
  }

  /** Checks the payload against itself and the document, and settles which fields go where. */
  function planFields(payload: TCreatePayload, doc: PreparedDocument): { fields: EngineFieldInput[]; fromMarkers: boolean } {
    const emails = checkRecipients(payload);

    const explicit: { f: TFieldInput; email: string; path: string }[] = [];
    (payload.fields ?? []).forEach((f, i) => explicit.push({ f, email: f.recipientEmail!, path: `payload.fields.${i}` }));
    payload.recipients.forEach((r, i) =>
      (r.fields ?? []).forEach((f, j) => explicit.push({ f, email: f.recipientEmail ?? r.email, path: `payload.recipients.${i}.fields.${j}` })),
    );

    if (explicit.length > 0) {
      return {
        fromMarkers: false,
        fields: explicit.map(({ f, email, path }) => {
          if (!emails.has(email.toLowerCase())) throw new AppError('RECIPIENT_NOT_FOUND', `${path}.recipientEmail: ${email} is not a recipient of this envelope`);
          if (f.page > doc.info.pageCount) throw invalid(`${path}.page`, `the document has ${doc.info.pageCount} page(s)`);
          return fieldToEngine(f, payload.recipients[emails.get(email.toLowerCase())!].email);
        }),
      };
    }

    // No fields given: place them from `{{type, rN}}` markers in the PDF text.
    if (doc.badMarkers.length) {
      const b = doc.badMarkers[0];
      throw invalid('pdf', `marker "${b.text}" on page ${b.page}: ${b.reason}`);
    }
    return {
      fromMarkers: doc.markers.length > 0,
      fields: doc.markers.map((m) => {
        const r = payload.recipients[m.recipientIndex - 1];
        if (!r) throw invalid('pdf', `marker "${m.text}" on page ${m.page} names r${m.recipientIndex}, but there are ${payload.recipients.length} recipient(s)`);
        return { recipientEmail: r.email, type: m.type, page: m.page, x: m.x, y: m.y, width: m.width, height: m.height, required: m.type !== 'CHECKBOX', options: null, hide: m };
      }),
    };
  }

  /**
   * Brings the stored copy in line with the engine (the engine wins) and records an event for every
   * move it finds. Every engine-side change goes through here in its own transaction, and live status
   * reads use it to correct a missed update. The envelope row must be locked by the caller.
   */
  async function syncFromEngine(tx: Tx, envelope: EnvelopeRow, live?: EngineStatus): Promise<EnvelopeRow> {
    const status = live ?? (await engine.status(tx, envelope.engineEnvelopeId));
    const stored = await repo.recipients(tx, [envelope.id]);
    const byEngineId = new Map(stored.map((r) => [r.engineRecipientId, r]));
    const events: { eventType: EventType; recipientEmail?: string | null }[] = [];

    for (const er of status.recipients) {
      const r = byEngineId.get(er.engineRecipientId);
      if (!r) continue;
      const signingStatus = er.status === 'SIGNED' ? 'SIGNED' : er.status === 'REJECTED' ? 'REJECTED' : 'NOT_SIGNED';
      if (er.readStatus === 'OPENED' && r.readStatus !== 'OPENED') events.push({ eventType: 'DOCUMENT_VIEWED', recipientEmail: r.email });
      if (signingStatus === 'SIGNED' && r.signingStatus !== 'SIGNED' && r.role === 'SIGNER') events.push({ eventType: 'DOCUMENT_SIGNED', recipientEmail: r.email });
      if (signingStatus === 'REJECTED' && r.signingStatus !== 'REJECTED') events.push({ eventType: 'DOCUMENT_REJECTED', recipientEmail: r.email });
      const changed =
        r.signingStatus !== signingStatus ||
        r.readStatus !== er.readStatus ||
        r.sendStatus !== er.sendStatus ||
        r.status !== er.status ||
        iso(r.signedAt) !== iso(er.signedAt) ||
        iso(r.viewedAt) !== iso(er.viewedAt) ||
        iso(r.rejectedAt) !== iso(er.rejectedAt) ||
        r.rejectionReason !== er.rejectionReason;
      if (changed) {
        await repo.updateRecipient(tx, r.id, {
          signingStatus,
          readStatus: er.readStatus,
          sendStatus: er.sendStatus,
          status: er.status,
          signedAt: er.signedAt,
          viewedAt: er.viewedAt,
          rejectedAt: er.rejectedAt,
          rejectionReason: er.rejectionReason,
        });
      }
    }

    let row = envelope;
    if (status.status !== envelope.status) {
      const ev = STATUS_EVENT[status.status];
      // A rejection's event was recorded with the rejecting recipient above.
      if (ev && !(ev === 'DOCUMENT_REJECTED' && events.some((e) => e.eventType === 'DOCUMENT_REJECTED'))) events.push({ eventType: ev });
      const completedAt = status.status === 'COMPLETED' ? (status.completedAt ?? new Date()) : envelope.completedAt;
      await repo.update(tx, envelope.id, { status: status.status, completedAt });
      row = { ...envelope, status: status.status, completedAt };
      if (['REJECTED', 'EXPIRED', 'CANCELLED'].includes(status.status)) await requestRefund(tx, row);
    }
    const inserted = [];
    for (const e of events) inserted.push(await repo.insertEvent(tx, { envelopeId: envelope.id, eventType: e.eventType, recipientEmail: e.recipientEmail ?? null }));
    if (inserted.length && deps.publish) {
      // Receivers get the envelope as it stands right after the change, the shape GET /v1/envelopes/{id} returns.
      const [dto] = await toDto(tx, [{ ...row, updatedAt: new Date() }], false);
      for (const ev of inserted) {
        await deps.publish(tx, {
          owner: { customerId: envelope.customerId, mode: envelope.mode },
          envelopeId: envelope.id,
          eventId: ev.id,
          event: EVENT_NAMES[ev.eventType as EventType],
          occurredAt: ev.occurredAt,
          envelope: dto,
          recipient: dto.recipients.find((r) => r.email === ev.recipientEmail) ?? null,
        });
      }
    }
    return row;
  }

  /** An envelope that ends without completing gets its charge back, once (unique row per envelope). */
  async function requestRefund(tx: Tx, envelope: EnvelopeRow): Promise<void> {
    if (envelope.chargedMicros <= 0n) return;
    const refund = await repo.insertRefund(tx, { envelopeId: envelope.id, customerId: envelope.customerId, amountMicros: envelope.chargedMicros });
    if (refund) await enqueue(tx, { type: REFUND_JOB, payload: { refundId: refund.id }, maxAttempts: 5 });
  }

  return {
    syncFromEngine,
    checkRecipients,

    async create(tx: Tx, ctx: RequestContext, input: { payload: TCreatePayload; document: PreparedDocument; draft: boolean }): Promise<{ dto: TEnvelope }> {
      const { payload, document, draft } = input;
      const { fields, fromMarkers } = planFields(payload, document);
      const now = Date.now();
      const expiresAt = payload.expiresAt ? new Date(payload.expiresAt) : new Date(now + deps.envelopeExpiryDays * DAY);
      if (expiresAt.getTime() <= now) throw invalid('payload.expiresAt', 'must be in the future');
      const storageExpiryDays = payload.storageExpiryDays ?? deps.storageExpiryDays;
      const testSend = ctx.actor.mode === 'test' || ctx.testModeHeader;

      const created = await engine.createDocument(tx, {
        document,
        title: payload.title ?? null,
        recipients: payload.recipients.map((r, i) => ({ position: i + 1, email: r.email, name: r.name, role: r.role, signingOrder: r.signingOrder ?? null })),
        fields,
        meta: payload.meta ?? {},
        testSend,
        expiresAt,
        draft,
      });
      const envelope = await repo.insert(tx, {
        customerId: ctx.actor.customerId,
        mode: ctx.actor.mode,
        engineEnvelopeId: created.engineEnvelopeId,
        engineNumericId: created.engineNumericId,
        status: draft ? 'DRAFT' : 'PENDING',
        title: payload.title ?? null,
        meta: payload.meta ?? {},
        testSend,
        documentSha256: document.sha256,
        pageCount: document.info.pageCount,
        detectedFromPlaceholders: fromMarkers,
        expiresAt,
        storageExpiryDays,
        storageExpiresAt: new Date(now + storageExpiryDays * DAY),
      });
      await repo.insertRecipients(
        tx,
        payload.recipients.map((r, i) => ({
          envelopeId: envelope.id,
          position: i + 1,
          email: r.email,
          name: r.name,
          role: r.role,
          signingOrder: r.signingOrder ?? null,
          engineRecipientId: created.recipients[i].engineRecipientId,
        })),
      );
      await repo.insertFields(
        tx,
        created.fields.map((cf, i) => ({ envelopeId: envelope.id, engineFieldId: cf.engineFieldId, recipientEmail: cf.recipientEmail, type: fields[i].type, page: fields[i].page, x: fields[i].x, y: fields[i].y, width: fields[i].width, height: fields[i].height })),
      );
      await deps.audit.customer(tx, ctx, { action: draft ? 'envelope.draft' : 'envelope.create', resourceType: 'envelope', resourceId: envelope.id });
      const [dto] = await toDto(tx, [{ ...envelope }], false);
      if (!draft) {
        await enqueue(tx, { type: DISTRIBUTE_JOB, payload: { envelopeId: envelope.id }, dedupeKey: `distribute:${envelope.id}` });
        // Last, so the customer's balance row is locked for as little of the transaction as possible:
        // concurrent creates of one customer queue on that lock.
        const charge = await deps.billing.charge(tx, { actor: ctx.actor, operation: 'envelope_create', testModeHeader: ctx.testModeHeader, envelopeId: envelope.id, envelopeTitle: envelope.title });
        if (!charge.sandbox) await repo.update(tx, envelope.id, { chargedMicros: charge.entry.amountMicros });
      }
      return { dto };
    },

    /** The distribution job: PENDING → SENT, invitations out. Safe to run twice. */
    async distribute(tx: Tx, envelopeId: string): Promise<void> {
      const envelope = await repo.findById(tx, envelopeId, true);
      if (!envelope || envelope.status !== 'PENDING') return;
      await engine.send(tx, envelope.engineEnvelopeId);
      await syncFromEngine(tx, envelope);
    },

    async get(db: DbOrTx, ctx: RequestContext, id: string): Promise<TEnvelope> {
      const envelope = await requireEnvelope(db, id, ownerOf(ctx));
      return (await toDto(db, [envelope], true))[0];
    },

    async list(db: DbOrTx, ctx: RequestContext, filter: { status?: string }, paging: Paging) {
      const { rows, total } = await repo.list(db, ownerOf(ctx), filter, paging);
      return { rows: await toDto(db, rows, false), total };
    },

    /** Live status: reads the engine and corrects the stored copy where they differ. */
    async liveStatus(tx: Tx, ctx: RequestContext, id: string) {
      const envelope = await syncFromEngine(tx, await requireEnvelope(tx, id, ownerOf(ctx), true));
      const [dto] = await toDto(tx, [envelope], false);
      return { envelopeId: dto.envelopeId, title: dto.title, status: dto.status, createdAt: dto.createdAt, completedAt: dto.completedAt, recipients: dto.recipients };
    },

    async send(tx: Tx, ctx: RequestContext, id: string, meta: TCreatePayload['meta']) {
      const envelope = await requireEnvelope(tx, id, ownerOf(ctx), true);
      if (envelope.status === 'CANCELLED') throw new AppError('ENVELOPE_CANCELLED', 'The envelope was cancelled');
      if (envelope.status !== 'DRAFT') throw new AppError('ALREADY_COMPLETED', `Only a DRAFT can be sent; this envelope is ${envelope.status}`);
      const charge = await deps.billing.charge(tx, { actor: ctx.actor, operation: 'envelope_send', testModeHeader: ctx.testModeHeader, envelopeId: envelope.id, envelopeTitle: envelope.title });
      // The send decides both the charge and where mail goes: a free (test) send never reaches a real mailbox.
      const testSend = charge.sandbox;
      await repo.update(tx, envelope.id, { chargedMicros: charge.sandbox ? 0n : charge.entry.amountMicros, testSend, ...(meta ? { meta: { ...envelope.meta, ...meta } } : {}) });
      await engine.send(tx, envelope.engineEnvelopeId, { meta: meta ?? undefined, testSend });
      const after = await syncFromEngine(tx, { ...envelope, chargedMicros: charge.sandbox ? 0n : charge.entry.amountMicros });
      await deps.audit.customer(tx, ctx, { action: 'envelope.send', resourceType: 'envelope', resourceId: envelope.id });
      const recipients = await repo.recipients(tx, [envelope.id]);
      return { envelopeId: envelope.id, status: after.status as EnvelopeStatus, recipients: recipients.map((r) => ({ name: r.name, email: r.email, signingUrl: deps.signingUrlOf(r.engineRecipientId) })) };
    },

    async resend(tx: Tx, ctx: RequestContext, id: string) {
      const envelope = await syncFromEngine(tx, await requireEnvelope(tx, id, ownerOf(ctx), true));
      if (envelope.status === 'COMPLETED') throw new AppError('ENVELOPE_ALREADY_COMPLETE', 'The envelope is completed');
      if (envelope.status === 'CANCELLED') throw new AppError('ENVELOPE_CANCELLED', 'The envelope was cancelled');
      const recipients = await repo.recipients(tx, [envelope.id]);
      const acting = recipients.filter((r) => r.role === 'SIGNER' || r.role === 'APPROVER');
      if (acting.every((r) => r.signingStatus === 'SIGNED')) throw new AppError('ALL_SIGNED', 'Every recipient has signed');
      // Before distribution there is nothing to remind of (the invitation itself is still to come).
      if (!['SENT', 'PARTIALLY_SIGNED'].includes(envelope.status)) throw new AppError('INVALID_STATE', `Nothing to remind: the envelope is ${envelope.status}`);
      const resentTo = await engine.resend(tx, envelope.engineEnvelopeId);
      await deps.audit.customer(tx, ctx, { action: 'envelope.resend', resourceType: 'envelope', resourceId: envelope.id, metadata: { resentTo: resentTo.map((r) => r.email) } });
      return { success: true as const, resentTo };
    },

    /** DELETE: any state but COMPLETED ends CANCELLED; links stop working; the charge is refunded. */
    async cancel(tx: Tx, ctx: RequestContext | null, envelope: EnvelopeRow) {
      if (envelope.status === 'COMPLETED') throw new AppError('CANNOT_DELETE_COMPLETED', 'A completed envelope cannot be deleted');
      if (envelope.status === 'CANCELLED') return;
      const synced = await syncFromEngine(tx, envelope);
      if (synced.status === 'COMPLETED') throw new AppError('CANNOT_DELETE_COMPLETED', 'A completed envelope cannot be deleted');
      if (synced.status === 'CANCELLED') return;
      // SPEC: any state but COMPLETED ends CANCELLED, REJECTED and EXPIRED included; the refund stays one.
      await engine.cancel(tx, envelope.engineEnvelopeId);
      await syncFromEngine(tx, synced);
      if (ctx) await deps.audit.customer(tx, ctx, { action: 'envelope.cancel', resourceType: 'envelope', resourceId: envelope.id });
    },

    /** Operator cancellation: any customer's envelope, same rules as DELETE. */
    async cancelAsOperator(tx: Tx, op: OperatorContext, id: string) {
      const envelope = UUID.test(id) ? await repo.findById(tx, id, true) : undefined;
      if (!envelope) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
      await this.cancel(tx, null, envelope);
      await deps.audit.operator(tx, op, { customerId: envelope.customerId, action: 'envelope.cancel', resourceType: 'envelope', resourceId: envelope.id });
      const after = (await repo.findById(tx, envelope.id))!;
      return { envelopeId: after.id, status: after.status as EnvelopeStatus };
    },

    /** Queues a refund that has not succeeded once more; a succeeded one is left as it is. */
    async retryRefund(tx: Tx, op: OperatorContext, refundId: string) {
      const refund = await repo.refund(tx, refundId, true);
      if (!refund) throw new AppError('NOT_FOUND', 'No such refund');
      if (refund.status !== 'succeeded') {
        await repo.updateRefund(tx, refund.id, { status: 'pending' });
        await enqueue(tx, { type: REFUND_JOB, payload: { refundId: refund.id }, maxAttempts: 5 });
      }
      await deps.audit.operator(tx, op, { customerId: refund.customerId, action: 'refund.retry', resourceType: 'refund', resourceId: refund.id });
      return { refundId: refund.id, status: refund.status === 'succeeded' ? 'succeeded' : 'pending' };
    },

    async remove(tx: Tx, ctx: RequestContext, id: string) {
      await this.cancel(tx, ctx, await requireEnvelope(tx, id, ownerOf(ctx), true));
      return { success: true as const };
    },

    async download(tx: Tx, ctx: RequestContext, id: string, version: 'signed' | 'original'): Promise<{ bytes: Uint8Array; filename: string }> {
      const envelope = await requireEnvelope(tx, id, ownerOf(ctx));
      if (envelope.purgedAt) throw new AppError('DOCUMENT_PURGED', 'The documents passed their retention date and were deleted');
      const base = (envelope.title ?? 'envelope').replace(/[^\w.-]+/g, '_').slice(0, 80) || 'envelope';
      if (version === 'original') return { bytes: await engine.originalPdf(tx, envelope.engineEnvelopeId), filename: `${base}.pdf` };
      if (envelope.status !== 'COMPLETED') throw new AppError('ENVELOPE_NOT_COMPLETE', `The envelope is ${envelope.status}; the signed PDF exists once it is COMPLETED`);
      return { bytes: await engine.signedPdf(tx, envelope.engineEnvelopeId), filename: `${base}-signed.pdf` };
    },

    async addFields(tx: Tx, ctx: RequestContext, id: string, fields: TFieldInput[]) {
      const envelope = await requireEnvelope(tx, id, ownerOf(ctx), true);
      if (envelope.status !== 'DRAFT') throw new AppError('FIELD_CREATION_FAILED', 'Fields can be added only while the envelope is a DRAFT');
      const recipients = await repo.recipients(tx, [envelope.id]);
      const engineFields = fields.map((f, i) => {
        const r = recipients.find((x) => x.email.toLowerCase() === f.recipientEmail!.toLowerCase());
        if (!r) throw new AppError('RECIPIENT_NOT_FOUND', `fields.${i}.recipientEmail: ${f.recipientEmail} is not a recipient of this envelope`);
        if (f.page > envelope.pageCount) throw invalid(`body.fields.${i}.page`, `the document has ${envelope.pageCount} page(s)`);
        return fieldToEngine(f, r.email);
      });
      const created = await engine.addFields(tx, envelope.engineEnvelopeId, engineFields);
      const rows = await repo.insertFields(
        tx,
        created.map((c, i) => ({ envelopeId: envelope.id, engineFieldId: c.engineFieldId, recipientEmail: c.recipientEmail, type: engineFields[i].type, page: engineFields[i].page, x: engineFields[i].x, y: engineFields[i].y, width: engineFields[i].width, height: engineFields[i].height })),
      );
      await deps.audit.customer(tx, ctx, { action: 'envelope.fields.add', resourceType: 'envelope', resourceId: envelope.id, metadata: { count: rows.length } });
      return { fields: rows.map(fieldDto) };
    },

    async removeField(tx: Tx, ctx: RequestContext, id: string, fid: string) {
      const envelope = await requireEnvelope(tx, id, ownerOf(ctx), true);
      if (!/^\d{1,15}$/.test(fid)) throw new AppError('INVALID_FIELD_ID', 'The field id must be the integer fieldId returned when the field was added');
      if (envelope.status !== 'DRAFT') throw new AppError('DELETE_FAILED', 'Fields can be removed only while the envelope is a DRAFT');
      const fieldId = Number(fid);
      if (!(await engine.removeField(tx, envelope.engineEnvelopeId, fieldId))) throw new AppError('INVALID_FIELD_ID', `No field ${fid} on this envelope`);
      await repo.deleteField(tx, envelope.id, fieldId);
      await deps.audit.customer(tx, ctx, { action: 'envelope.fields.remove', resourceType: 'envelope', resourceId: envelope.id, metadata: { fieldId } });
    },

    /** Periodic: non-terminal envelopes past their signing window end EXPIRED. */
    async expireDue(tx: Tx, limit = 100): Promise<number> {
      const due = await repo.dueForExpiry(tx, limit);
      for (const envelope of due) {
        const synced = await syncFromEngine(tx, envelope);
        if (TERMINAL_STATUSES.includes(synced.status as EnvelopeStatus)) continue;
        await engine.expire(tx, envelope.engineEnvelopeId);
        await syncFromEngine(tx, synced);
      }
      return due.length;
    },

    /** Periodic: documents past storageExpiresAt are deleted; download answers 410 DOCUMENT_PURGED. */
    async purgeDue(tx: Tx, limit = 100): Promise<number> {
      const due = await repo.dueForPurge(tx, limit);
      for (const envelope of due) {
        await engine.purge(tx, envelope.engineEnvelopeId);
        await repo.update(tx, envelope.id, { purgedAt: new Date() });
      }
      return due.length;
    },

    /** The refund job: credits the charge back exactly once; a failure is recorded and alerted. */
    async runRefund(tx: Tx, refundId: string): Promise<void> {
      const refund = await repo.refund(tx, refundId, true);
      if (!refund || refund.status === 'succeeded') return;
      const { entry } = await deps.billing.credit(tx, { customerId: refund.customerId, micros: refund.amountMicros, direction: 'refund', description: 'Refund: envelope ended without completing', envelopeId: refund.envelopeId });
      await repo.updateRefund(tx, refund.id, { status: 'succeeded', attempts: refund.attempts + 1, ledgerEntryId: entry.id, lastError: null });
    },

    async recordRefundFailure(tx: Tx, refundId: string, error: string, final: boolean): Promise<void> {
      const refund = await repo.refund(tx, refundId, true);
      if (!refund || refund.status === 'succeeded') return;
      await repo.updateRefund(tx, refund.id, { attempts: refund.attempts + 1, lastError: error.slice(0, 500), status: final ? 'failed' : 'pending' });
      if (final) {
        await deps.audit.alert(tx, { kind: 'refund_failed', message: `Refund ${refund.id} for envelope ${refund.envelopeId} failed: ${error.slice(0, 200)}`, customerId: refund.customerId, resourceType: 'refund', resourceId: refund.id });
      }
    },
  };
}

export type EnvelopesService = ReturnType<typeof createEnvelopesService>;
