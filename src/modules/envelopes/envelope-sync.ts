import { placementDto } from './envelope-plan.js';
import type { Db, DbOrTx, Tx } from '../../db/client.js';
import type { EngineStatus, EnvelopeStatus, Role, SigningEngine } from '../../engine/engine.js';
import type { RefundsService } from '../billing/refunds.service.js';
import type { EnvelopeRow, EnvelopesRepo, EventRow, Owner, RecipientState, StoredFieldRow, StoredRecipientRow } from './envelopes.repo.js';
import type { TEnvelope } from './envelopes.schemas.js';
import { EVENT_NAMES, eventNameOf, isWebhookEvent, STATUS_EVENT, type ListedEventType } from './events.js';
import { isLocale } from '../../i18n/locales.js';

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);


/** What a sync reads and writes of the stored copy: equal before and under the lock, nobody synced in between. */
const copyOf = (envelope: Pick<EnvelopeRow, 'status'>, recipients: StoredRecipientRow[]) =>
  JSON.stringify([envelope.status, recipients.map((r) => [r.id, r.signingStatus, r.readStatus, r.sendStatus, r.status, iso(r.signedAt), iso(r.viewedAt), iso(r.rejectedAt), r.rejectionReason])]);

/**
 * A send Signet recorded (PENDING: charged, its distribution queued) is never undone by a sync: an
 * engine still holding a draft is that distribution still to come (envelope-send.ts). Nor is a
 * cancellation Signet recorded (refunded, its engine call queued: remote-sweeps.ts), unless the engine
 * completed the envelope first.
 */
const asRecorded = (envelope: Pick<EnvelopeRow, 'status'>, status: EngineStatus): EngineStatus => {
  if (envelope.status === 'PENDING' && status.status === 'DRAFT') return { ...status, status: 'PENDING' };
  if (envelope.status === 'CANCELLED' && status.status !== 'COMPLETED') return { ...status, status: 'CANCELLED' };
  return status;
};

export type PublishedEvent = {
  owner: Owner;
  envelopeId: string;
  eventId: number;
  event: string;
  occurredAt: Date;
  /** The envelope and the event's recipient as receivers see them; built when first asked for. */
  payload: () => Promise<{ envelope: Record<string, unknown>; recipient: Record<string, unknown> | null }>;
};

/** An envelope's stored copy as it stands against the engine's status. */
export type InStep = { envelope: EnvelopeRow; recipients: StoredRecipientRow[]; status: EngineStatus };

/** What a live status read needs of the envelope's row (the local engine's statement reads no more). */
export type StatusEnvelope = Pick<EnvelopeRow, 'id' | 'engineEnvelopeId' | 'status' | 'title' | 'createdAt' | 'completedAt'>;

export type RecipientGate = { verificationId: string; chargedMicros: bigint; verified: boolean };

export type EnvelopeSyncDeps = {
  repo: EnvelopesRepo;
  engine: Pick<SigningEngine, 'status'>;
  refunds: Pick<RefundsService, 'request'>;
  /** The recipients' signing links by engine recipient id (derived from per-recipient salts the engine keeps). */
  signingUrlsOf: (tx: DbOrTx, engineRecipientIds: string[]) => Promise<Map<string, string>>;
  /**
   * The verification of each gated recipient (by engine recipient id) that has one: its id for the
   * DTO, and whether it was used, for the refund of an envelope that ends without completing.
   */
  gatesOf?: (tx: DbOrTx, engineRecipientIds: string[]) => Promise<Map<string, RecipientGate>>;
  /** Cancels the gated recipients' pending verifications once their envelope has ended. */
  endGates?: (tx: Tx, engineRecipientIds: string[]) => Promise<void>;
  /** Called in the transaction that records events (webhook fan-out). */
  publish?: (tx: Tx, e: PublishedEvent) => Promise<void>;
  /** Called once, in the transaction that moves an envelope to an end state (the sender's notice). */
  ended?: (tx: Tx, e: { envelope: EnvelopeRow; recipients: StoredRecipientRow[]; status: string; at: Date }) => Promise<void>;
};

/**
 * The service's stored copy of each envelope against the engine, which is authoritative: every
 * engine-side change is followed by a sync in the same transaction, and the DTOs callers and webhook
 * receivers see are built here from the stored copy.
 */
export function createEnvelopeSync(deps: EnvelopeSyncDeps) {
  const { repo, engine } = deps;

  async function gatesOf(tx: DbOrTx, recipients: StoredRecipientRow[]): Promise<Map<string, RecipientGate>> {
    const gated = recipients.filter((r) => r.verificationRequired).map((r) => r.engineRecipientId);
    return gated.length && deps.gatesOf ? deps.gatesOf(tx, gated) : new Map();
  }

  function recipientDto(r: StoredRecipientRow, links: Map<string, string>, gates: Map<string, RecipientGate>) {
    return {
      email: r.email,
      name: r.name,
      role: r.role as Role,
      signingOrder: r.signingOrder,
      signingUrl: links.get(r.engineRecipientId)!,
      signingStatus: r.signingStatus,
      readStatus: r.readStatus,
      sendStatus: r.sendStatus,
      status: r.status,
      signedAt: iso(r.signedAt),
      viewedAt: iso(r.viewedAt),
      rejectedAt: iso(r.rejectedAt),
      rejectionReason: r.rejectionReason,
      verificationRequired: r.verificationRequired,
      verificationId: gates.get(r.engineRecipientId)?.verificationId ?? null,
      locale: isLocale(r.locale) ? r.locale : null,
    };
  }

  const fieldDto = (f: StoredFieldRow) => ({
    fieldId: f.engineFieldId,
    id: String(f.engineFieldId),
    type: f.type as TEnvelope['fields'][number]['type'],
    recipientEmail: f.recipientEmail,
    ...placementDto(f),
    ...f.rules,
  });

  /** The DTO of one envelope from rows already in hand (a create builds it from what it wrote). */
  function dtoOf(
    e: EnvelopeRow,
    parts: { recipients: StoredRecipientRow[]; fields: StoredFieldRow[]; links: Map<string, string>; gates: Map<string, RecipientGate>; events?: EventRow[] },
  ): TEnvelope {
    return {
      envelopeId: e.id,
      engineEnvelopeId: e.engineEnvelopeId,
      engineNumericId: e.engineNumericId,
      status: e.status as EnvelopeStatus,
      title: e.title,
      recipients: parts.recipients.filter((r) => r.envelopeId === e.id).map((r) => recipientDto(r, parts.links, parts.gates)),
      fields: parts.fields.filter((f) => f.envelopeId === e.id).map(fieldDto),
      detectedFromPlaceholders: e.detectedFromPlaceholders,
      expiresAt: e.expiresAt.toISOString(),
      storageExpiresAt: iso(e.storageExpiresAt),
      createdAt: e.createdAt.toISOString(),
      updatedAt: e.updatedAt.toISOString(),
      completedAt: iso(e.completedAt),
      ...(parts.events
        ? {
            events: parts.events.map((ev) => ({
              eventType: ev.eventType,
              event: eventNameOf(ev.eventType),
              recipientEmail: ev.recipientEmail,
              occurredAt: ev.occurredAt.toISOString(),
              ...(ev.details ? { details: ev.details } : {}),
            })),
          }
        : {}),
    };
  }

  /** The live status answer: the envelope's status fields and its recipients (all of this envelope's), no more built. */
  function statusDtoOf(e: StatusEnvelope, parts: { recipients: StoredRecipientRow[]; links: Map<string, string>; gates: Map<string, RecipientGate> }) {
    return {
      envelopeId: e.id,
      title: e.title,
      status: e.status as EnvelopeStatus,
      createdAt: e.createdAt.toISOString(),
      completedAt: iso(e.completedAt),
      recipients: parts.recipients.map((r) => recipientDto(r, parts.links, parts.gates)),
    };
  }

  async function toDto(tx: DbOrTx, rows: EnvelopeRow[], withEvents: boolean): Promise<TEnvelope[]> {
    const ids = rows.map((r) => r.id);
    const [recipients, fields] = await Promise.all([repo.recipients(tx, ids), repo.fields(tx, ids)]);
    const links = await deps.signingUrlsOf(tx, recipients.map((r) => r.engineRecipientId));
    const gates = await gatesOf(tx, recipients);
    return Promise.all(rows.map(async (e) => dtoOf(e, { recipients, fields, links, gates, events: withEvents ? await repo.events(tx, e.id) : undefined })));
  }

  /** The recipients' signing links by engine recipient id: those the engine reported with its status, the rest read. */
  async function linksOf(db: DbOrTx, status: EngineStatus, recipients: StoredRecipientRow[]): Promise<Map<string, string>> {
    const links = new Map(status.recipients.flatMap((r) => (r.signingUrl ? [[r.engineRecipientId, r.signingUrl] as const] : [])));
    const missing = recipients.map((r) => r.engineRecipientId).filter((id) => !links.has(id));
    if (missing.length) for (const [id, url] of await deps.signingUrlsOf(db, missing)) links.set(id, url);
    return links;
  }

  /** What the stored copy lacks against the engine: recipient rows to update and events to record. Pure. */
  function diff(envelope: Pick<EnvelopeRow, 'status'>, status: EngineStatus, stored: StoredRecipientRow[], now = new Date()) {
    const byEngineId = new Map(stored.map((r) => [r.engineRecipientId, r]));
    const events: { eventType: ListedEventType; recipientEmail?: string | null }[] = [];
    const updates: { id: number; set: RecipientState }[] = [];
    for (const er of status.recipients) {
      const r = byEngineId.get(er.engineRecipientId);
      if (!r) continue;
      const signingStatus = er.status === 'SIGNED' ? 'SIGNED' : er.status === 'REJECTED' ? 'REJECTED' : 'NOT_SIGNED';
      // An engine that keeps no time of the first view (Documenso): the time Signet first saw it opened.
      const viewedAt = er.viewedAt ?? (er.readStatus === 'OPENED' ? (r.viewedAt ?? now) : null);
      // An engine that keeps its own consent (Documenso) reports none: the stored value stands.
      const consentedAt = er.consentedAt === undefined ? r.consentedAt : er.consentedAt;
      if (consentedAt && !r.consentedAt) events.push({ eventType: 'RECIPIENT_CONSENTED', recipientEmail: r.email });
      if (er.readStatus === 'OPENED' && r.readStatus !== 'OPENED') events.push({ eventType: 'DOCUMENT_VIEWED', recipientEmail: r.email });
      if (signingStatus === 'SIGNED' && r.signingStatus !== 'SIGNED' && r.role === 'SIGNER') events.push({ eventType: 'DOCUMENT_SIGNED', recipientEmail: r.email });
      if (signingStatus === 'REJECTED' && r.signingStatus !== 'REJECTED') events.push({ eventType: 'DOCUMENT_REJECTED', recipientEmail: r.email });
      const changed =
        r.signingStatus !== signingStatus ||
        r.readStatus !== er.readStatus ||
        r.sendStatus !== er.sendStatus ||
        r.status !== er.status ||
        iso(r.signedAt) !== iso(er.signedAt) ||
        iso(r.viewedAt) !== iso(viewedAt) ||
        iso(r.rejectedAt) !== iso(er.rejectedAt) ||
        r.rejectionReason !== er.rejectionReason ||
        iso(r.consentedAt) !== iso(consentedAt);
      if (changed) {
        updates.push({
          id: r.id,
          set: {
            signingStatus,
            readStatus: er.readStatus,
            sendStatus: er.sendStatus,
            status: er.status,
            signedAt: er.signedAt,
            viewedAt,
            rejectedAt: er.rejectedAt,
            rejectionReason: er.rejectionReason,
            consentedAt,
          },
        });
      }
    }
    return { events, updates, inStep: updates.length === 0 && events.length === 0 && status.status === envelope.status };
  }

  /**
   * Brings the stored copy in line with the engine (the engine wins) and records an event for every
   * move it finds. Every engine-side change goes through here in its own transaction, and live status
   * reads use it to correct a missed update. The envelope row must be locked by the caller.
   */
  async function syncFromEngine(tx: Tx, envelope: EnvelopeRow, live?: EngineStatus): Promise<EnvelopeRow> {
    return (await reconcile(tx, envelope, { live })).envelope;
  }

  /**
   * syncFromEngine, answering also the stored recipients as they now stand and the engine's status it
   * read. `known`: what the caller already read under the lock (the engine's status, the stored
   * recipients), so it is not read again.
   */
  async function reconcile(tx: Tx, envelope: EnvelopeRow, known: { live?: EngineStatus; stored?: StoredRecipientRow[] } = {}): Promise<InStep> {
    const status = asRecorded(envelope, known.live ?? (await engine.status(tx, envelope.engineEnvelopeId)));
    const stored = known.stored ?? (await repo.recipients(tx, [envelope.id]));
    const { events, updates } = diff(envelope, status, stored);
    const updated = new Map(updates.map((u) => [u.id, u.set]));
    const recipients = stored.map((r) => ({ ...r, ...updated.get(r.id) }));

    let row = envelope;
    let moved: { status: string; completedAt: Date | null } | undefined;
    if (status.status !== envelope.status) {
      const ev = STATUS_EVENT[status.status];
      // A rejection's event was recorded with the rejecting recipient above.
      if (ev && !(ev === 'DOCUMENT_REJECTED' && events.some((e) => e.eventType === 'DOCUMENT_REJECTED'))) events.push({ eventType: ev });
      moved = { status: status.status, completedAt: status.status === 'COMPLETED' ? (status.completedAt ?? new Date()) : envelope.completedAt };
      row = { ...envelope, ...moved };
    }
    // The recipients, the envelope and the events in one statement.
    const inserted = await repo.recordSync(tx, envelope.id, { updates, status: moved, events: events.map((e) => ({ eventType: e.eventType, recipientEmail: e.recipientEmail ?? null })) });
    if (moved && ['REJECTED', 'EXPIRED', 'CANCELLED'].includes(moved.status)) {
      // A gated recipient's verification is refunded with the envelope unless it was used: a code
      // confirmed is a service rendered; one never confirmed unlocked nothing.
      const gates = await gatesOf(tx, stored);
      let unused = 0n;
      for (const gate of gates.values()) if (!gate.verified) unused += gate.chargedMicros;
      if (gates.size && deps.endGates) await deps.endGates(tx, [...gates.keys()]);
      await deps.refunds.request(tx, { ...row, chargedMicros: row.chargedMicros + unused });
    }
    // Every engine's end (a seal, a decline, an expiry, a remote engine's callback) passes here once.
    if (moved && deps.ended) await deps.ended(tx, { envelope: row, recipients, status: moved.status, at: new Date() });
    if (inserted.length && deps.publish) {
      // Receivers get the envelope as it stands right after the change, the shape GET /v1/envelopes/{id}
      // returns: built from the recipients as just written, the links the engine reported where it did.
      // Built once for all the events, and only if an endpoint takes one: most customers have none.
      const at = new Date();
      let built: Promise<TEnvelope> | undefined;
      const envelopeNow = () =>
        (built ??= (async () => dtoOf({ ...row, updatedAt: at }, { recipients, fields: await repo.fields(tx, [envelope.id]), links: await linksOf(tx, status, recipients), gates: await gatesOf(tx, recipients) }))());
      for (const ev of inserted) {
        if (!isWebhookEvent(ev.eventType)) continue;
        await deps.publish(tx, {
          owner: { customerId: envelope.customerId, mode: envelope.mode },
          envelopeId: envelope.id,
          eventId: ev.id,
          event: EVENT_NAMES[ev.eventType],
          occurredAt: ev.occurredAt,
          payload: async () => {
            const dto = await envelopeNow();
            return { envelope: dto, recipient: dto.recipients.find((r) => r.email === ev.recipientEmail) ?? null };
          },
        });
      }
    }
    return { envelope: row, recipients, status };
  }

  /**
   * Locks the envelope row that fronts an engine document (every state change takes this lock first),
   * lets `work` change the engine's rows, then brings the stored copy in line, all in the caller's
   * transaction. Undefined, with `work` not run, when no envelope fronts the document.
   */
  async function lockAndSync<T>(tx: Tx, engineEnvelopeId: string, work: () => Promise<T>): Promise<{ value: T } | undefined> {
    const envelope = await repo.findByEngineId(tx, engineEnvelopeId, true);
    if (!envelope) return undefined;
    const value = await work();
    await syncFromEngine(tx, envelope);
    return { value };
  }

  /**
   * The live status read (engine wins) without serializing readers, and without a transaction while
   * the copy is in step, which is nearly always: `copy` (the envelope and its stored recipients, read
   * unlocked by the caller) is compared with the engine's status, read on the same executor. Only when
   * they differ is a transaction opened, the envelope locked (`lock`) and synced, as any change is,
   * with its events and webhooks; the answer is then the copy as the sync left it.
   *
   * The two reads may see different instants: every change commits the engine's rows and the copy
   * together, so a change between them shows as a difference and takes the locked path, where both
   * are read again. Answers the links and the gates the DTO needs, from the engine's status when it
   * carries the links. `copy.status`: the engine's status when it was read with the copy, in the same
   * statement (SigningEngine.statusWithCopy); else it is read here.
   */
  async function readInStep<E extends StatusEnvelope>(
    db: DbOrTx,
    copy: { envelope: E; recipients: StoredRecipientRow[]; status?: EngineStatus },
    lock: (tx: Tx) => Promise<EnvelopeRow>,
  ): Promise<Omit<InStep, 'envelope'> & { envelope: E | EnvelopeRow; links: Map<string, string>; gates: Map<string, RecipientGate> }> {
    const status = asRecorded(copy.envelope, copy.status ?? (await engine.status(db, copy.envelope.engineEnvelopeId)));
    const read = diff(copy.envelope, status, copy.recipients).inStep
      ? { ...copy, status }
      : await db.transaction(async (tx) => {
          const envelope = await lock(tx);
          const stored = await repo.recipients(tx, [envelope.id]);
          // Unchanged since the read: it is applied as read, with no engine call under the lock.
          return reconcile(tx, envelope, copyOf(envelope, stored) === copyOf(copy.envelope, copy.recipients) ? { live: status, stored } : { stored });
        });
    return { ...read, links: await linksOf(db, read.status, read.recipients), gates: await gatesOf(db, read.recipients) };
  }

  /**
   * lockAndSync with nothing to do but sync (a remote engine's callback): the engine is read with no
   * transaction open, and the read applied under the lock only if the stored copy did not change
   * meanwhile (else a newer sync may have applied a newer read: read again; after three tries, read
   * under the lock). False when no envelope fronts the document.
   */
  async function syncOutside(db: Db, engineEnvelopeId: string): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      const before = await repo.findByEngineId(db, engineEnvelopeId);
      if (!before) return false;
      const stored = await repo.recipients(db, [before.id]);
      const live = attempt <= 3 ? await engine.status(db, engineEnvelopeId) : undefined;
      const applied = await db.transaction(async (tx) => {
        const envelope = await repo.findByEngineId(tx, engineEnvelopeId, true);
        if (!envelope) return true;
        const now = await repo.recipients(tx, [envelope.id]);
        if (live && copyOf(envelope, now) !== copyOf(before, stored)) return false;
        await reconcile(tx, envelope, { live, stored: now });
        return true;
      });
      if (applied) return true;
    }
  }

  return { toDto, dtoOf, statusDtoOf, gatesOf, fieldDto, linksOf, syncFromEngine, reconcile, lockAndSync, readInStep, syncOutside };
}

export type EnvelopeSync = ReturnType<typeof createEnvelopeSync>;
