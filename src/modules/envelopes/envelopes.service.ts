import { randomUUID } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import type { OperatorContext, Paging, RequestContext } from '../../context.js';
import type { Db, DbOrTx, Tx } from '../../db/client.js';
import { TERMINAL_STATUSES, type DocumentStream, type EngineFieldInput, type EnvelopeStatus, type SigningEngine, type StagedDocument } from '../../engine/engine.js';
import { resolveRules } from '../../engine/field-rules.js';
import { AppError } from '../../errors.js';
import { enqueueStatement } from '../../jobs/queue.js';
import type { PreparedDocument, UploadPart } from '../../pdf/types.js';
import type { AuditService } from '../audit/audit.service.js';
import type { BillingService } from '../billing/billing.service.js';
import type { VerificationsService } from '../verifications/verifications.service.js';
import { checkRecipients, fieldToEngine, invalid, planFields, requireDelegable, requireSignatureFields } from './envelope-plan.js';
import { addDraftFields } from './field-add.js';
import { createEnvelopeSend, requireDraft } from './envelope-send.js';
import { CANCEL_JOB, createRemoteSweeps, EXPIRE_JOB, PURGE_JOB } from './remote-sweeps.js';
import { createRemoteResend, requireRemindable, type Reminded } from './envelope-resend.js';
import type { EnvelopeSync } from './envelope-sync.js';
import { DISTRIBUTE_JOB } from './envelopes.jobs.js';
import { downloadTarget, enginePdf, openEnginePdf, type DownloadVersion } from './envelope-downloads.js';
import type { EnvelopesRepo, EnvelopeRow, Owner, StoredRecipientRow } from './envelopes.repo.js';
import type { TCreatePayload, TEnvelope, TFieldInput } from './envelopes.schemas.js';
import { accountSettings, type SenderAccount } from './envelope-account.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DAY = 86_400_000;

const ownerOf = (ctx: RequestContext): Owner => ({ customerId: ctx.actor.customerId, mode: ctx.actor.mode });
// An x402 payment buys exactly the route's price: it cannot also pay for a gated recipient's verification.
const gatedUnderX402 = () => new AppError('X402_NOT_APPLICABLE', 'A recipient with verificationRequired is charged a verification (USD 0.50) with the envelope, which an x402 payment cannot cover; pay from a prepaid balance (API key or wallet JWT)');

/** A create, checked and planned before its transaction opens: the PDF parse and the rules cost no lock. */
export type CreatePlan = {
  /** The envelope's id, chosen up front so rows written before the envelope's can name it. */
  envelopeId: string;
  payload: TCreatePayload;
  document: PreparedDocument;
  fields: EngineFieldInput[];
  fromMarkers: boolean;
  draft: boolean;
  expiresAt: Date;
  /** What a send at create is charged as: a create, or an envelope made from a template. */
  operation: 'envelope_create' | 'envelope_from_template';
  /** Mail goes to the outbox only (a test key, or X-Service-Test-Mode on a create-and-send). */
  testSend: boolean;
  /** The engine's part done before the transaction: the document stored, the links minted. */
  staged: StagedDocument;
};

/**
 * Where a plan's document and fields come from: an upload, parsed in the sandbox and placed from the
 * payload; or a source that has them ready (a template's stored PDF and fields), read only once the
 * rules and the balance passed.
 */
export type PlanSource = { parts: UploadPart[] } | { prepared: () => Promise<{ document: PreparedDocument; fields: EngineFieldInput[]; fromMarkers: boolean }> };

export type EnvelopeServiceDeps = {
  repo: EnvelopesRepo;
  engine: SigningEngine;
  sync: Pick<EnvelopeSync, 'syncFromEngine' | 'reconcile' | 'linksOf' | 'toDto' | 'dtoOf' | 'statusDtoOf' | 'gatesOf' | 'fieldDto' | 'readInStep'>;
  billing: Pick<BillingService, 'charge' | 'assertAffordable' | 'quote'>;
  /** Creates and charges (USD 0.50) a gated recipient's verification in the caller's transaction. */
  verifications: Pick<VerificationsService, 'createForRecipient'>;
  audit: AuditService;
  /** Parses the upload in the sandbox; `owner` is whose turn it is in the parse queue (fair per customer). */
  prepareDocument: (parts: UploadPart[], owner: string) => Promise<PreparedDocument>;
  signingUrlsOf: (tx: DbOrTx, engineRecipientIds: string[]) => Promise<Map<string, string>>;
  /** The account's name, which invitations show as the sender, and its consent text (read before the transaction). */
  senderOf: (customerId: string) => Promise<SenderAccount | undefined>;
  envelopeExpiryDays: number;
  storageExpiryDays: number;
};

export function createEnvelopesService(deps: EnvelopeServiceDeps) {
  const { repo, engine, sync } = deps;
  const { syncFromEngine, toDto, dtoOf, fieldDto } = sync;

  async function requireEnvelope(tx: DbOrTx, id: string, owner: Owner, lock = false): Promise<EnvelopeRow> {
    const row = UUID.test(id) ? await repo.find(tx, id, owner, lock) : undefined;
    if (!row) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
    return row;
  }

  /**
   * A gated recipient's verification is created and charged (USD 0.50 each, by the verifications
   * module) when the envelope is sent, after the envelope's own charge and in the same transaction:
   * one Idempotency-Key covers them all, and a replay charges nothing more.
   */
  async function gateRecipients(tx: Tx, ctx: RequestContext, envelope: EnvelopeRow, recipients: StoredRecipientRow[]): Promise<void> {
    for (const r of recipients) {
      if (!r.verificationRequired) continue;
      await deps.verifications.createForRecipient(tx, ctx, { envelopeId: envelope.id, engineRecipientId: r.engineRecipientId, email: r.email, name: r.name, expiresAt: envelope.expiresAt });
    }
  }

  /** Rows whose sweep failed and was alerted, so a row failing on every tick alerts once per process. */
  const alerted = new Set<string>();

  /**
   * Runs one row of a sweep in a savepoint: a row that throws is rolled back alone, alerted, and
   * skipped, and the sweep goes on with the next (it is tried again on the next tick).
   */
  async function eachRow(tx: Tx, sweep: 'expiry' | 'purge', envelope: EnvelopeRow, work: (sp: Tx) => Promise<void>): Promise<void> {
    try {
      await tx.transaction(work);
    } catch (err) {
      const key = `${sweep}:${envelope.id}`;
      if (alerted.has(key)) return;
      alerted.add(key);
      const message = err instanceof Error ? err.message : String(err);
      await deps.audit.alert(tx, {
        kind: `envelope_${sweep}_failed`,
        message: `The ${sweep} sweep skipped envelope ${envelope.id}: ${message.slice(0, 300)}`,
        customerId: envelope.customerId,
        resourceType: 'envelope',
        resourceId: envelope.id,
      });
    }
  }

  const remote = createRemoteSweeps({ repo, engine, sync });
  const remindOutside = createRemoteResend({ repo, engine, sync });
  const sending = createEnvelopeSend({ repo, engine, sync, billing: deps.billing, audit: deps.audit, signingUrlsOf: deps.signingUrlsOf, gateRecipients });

  return {
    /**
     * Checks a create and settles its fields, cheapest refusal first: the recipient rules and the
     * signing window need no document; then the PDF is parsed (in the sandbox) and the fields placed.
     */
    async plan(ctx: RequestContext, input: { payload: TCreatePayload; draft: boolean; operation?: CreatePlan['operation'] } & PlanSource): Promise<CreatePlan> {
      const { payload, draft, operation = 'envelope_create' } = input;
      const emails = checkRecipients(payload);
      const now = Date.now();
      const expiresAt = payload.expiresAt ? new Date(payload.expiresAt) : new Date(now + deps.envelopeExpiryDays * DAY);
      if (expiresAt.getTime() <= now) throw invalid('payload.expiresAt', 'must be in the future');
      // Retention counts from the create and must outlast the signing window: the seal stamps the original.
      const retentionEnds = now + (payload.storageExpiryDays ?? deps.storageExpiryDays) * DAY;
      if (retentionEnds <= expiresAt.getTime()) {
        const windowDays = Math.floor((expiresAt.getTime() - now) / DAY);
        throw payload.storageExpiryDays !== undefined
          ? invalid('payload.storageExpiryDays', `must outlast the signing window: at least ${windowDays + 1} for an envelope that expires in ${windowDays} day(s)`)
          : invalid('payload.expiresAt', `must fall within the document retention of ${deps.storageExpiryDays} days; set a longer storageExpiryDays`);
      }
      // A customer who cannot pay is refused before the parse and before any file is stored (a draft is not charged).
      // Each gated recipient is one verification more, charged with the envelope.
      const gated = payload.recipients.filter((r) => r.verificationRequired).length;
      if (!draft && gated && ctx.actor.payment) throw gatedUnderX402();
      const standing = draft ? undefined : await deps.billing.assertAffordable({ actor: ctx.actor, operation, testModeHeader: ctx.testModeHeader, also: Array(gated).fill('verification_create') });
      const planned =
        'prepared' in input
          ? await input.prepared()
          : await deps.prepareDocument(input.parts, ctx.actor.customerId).then((document) => ({ document, ...planFields(payload, emails, document) }));
      if (!draft) requireSignatureFields(payload.recipients, planned.fields, (i) => `payload.recipients.${i}`);
      // SPEC honours X-Service-Test-Mode on create-and-send only; a draft's send decides its own mode.
      const testSend = ctx.actor.mode === 'test' || (!draft && ctx.testModeHeader);
      const staged = await engine.stageDocument({
        document: planned.document,
        title: payload.title ?? null,
        recipients: payload.recipients.map((r, i) => ({ position: i + 1, email: r.email, name: r.name, role: r.role, signingOrder: r.signingOrder ?? null, verificationRequired: r.verificationRequired ?? false, locale: r.locale ?? null })),
        fields: planned.fields,
        meta: payload.meta ?? {},
        delivery: payload.delivery ?? 'email', allowDelegation: requireDelegable(engine, payload.allowDelegation),
        // Copied onto the document: what recipients are shown and agree to stays as it was at create.
        ...accountSettings(payload, standing ?? (await deps.senderOf(ctx.actor.customerId)), engine), // no check read it: a draft, x402
        testSend,
        expiresAt,
        draft,
      });
      return { envelopeId: randomUUID(), payload, draft, expiresAt, operation, testSend, staged, ...planned };
    },

    /** Runs `commit` (a planned create's transaction); when it throws, the engine's stage is undone (nothing was charged). */
    async commitPlanned<T>(db: DbOrTx, plan: Pick<CreatePlan, 'staged'>, commit: () => Promise<T>): Promise<T> {
      return commit().catch(async (err: unknown) => {
        // Unless a committed row holds the document: a failure after the commit leaves a real envelope.
        if (!(await repo.findByEngineId(db, plan.staged.engineEnvelopeId).catch(() => true))) await engine.discardStaged(plan.staged);
        throw err;
      });
    },

    /**
     * The rows of a planned create in three statements that read nothing back: the engine's rows; the
     * envelope's with its audit row, its job and the caller's `also` (another module's writes); the
     * charge, last, so the customer's balance row (on which its creates queue) is locked briefly.
     */
    async create(tx: Tx, ctx: RequestContext, plan: CreatePlan, also: SQL[] = []): Promise<{ dto: TEnvelope }> {
      const { payload, document, draft, fields, fromMarkers, expiresAt, testSend } = plan;
      const now = new Date();
      const storageExpiryDays = payload.storageExpiryDays ?? deps.storageExpiryDays;
      const billed = { actor: ctx.actor, operation: plan.operation, testModeHeader: ctx.testModeHeader };
      const quote = draft ? undefined : deps.billing.quote(billed);

      const created = await engine.createDocument(tx, plan.staged);
      const { envelope, recipients, fields: storedFields } = await repo.insertTree(
        tx,
        {
          id: plan.envelopeId,
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
          chargedMicros: quote?.amountMicros ?? 0n,
          expiresAt,
          storageExpiryDays,
          storageExpiresAt: new Date(now.getTime() + storageExpiryDays * DAY),
        },
        payload.recipients.map((r, i) => ({ position: i + 1, email: r.email, name: r.name, role: r.role, signingOrder: r.signingOrder ?? null, engineRecipientId: created.recipients[i].engineRecipientId, verificationRequired: r.verificationRequired ?? false, locale: r.locale ?? null })),
        created.fields.map((cf, i) => ({ engineFieldId: cf.engineFieldId, recipientEmail: cf.recipientEmail, type: fields[i].type, page: fields[i].page, x: fields[i].x, y: fields[i].y, width: fields[i].width, height: fields[i].height, options: fields[i].options, rules: resolveRules(fields[i].rules, created.fields.map((c) => c.engineFieldId)) })),
        [
          deps.audit.customerStatement(ctx, { action: draft ? 'envelope.draft' : 'envelope.create', resourceType: 'envelope', resourceId: plan.envelopeId }),
          ...(draft ? [] : [enqueueStatement([{ type: DISTRIBUTE_JOB, payload: { envelopeId: plan.envelopeId }, dedupeKey: `distribute:${plan.envelopeId}` }])]),
          ...also,
        ],
      );
      if (!draft) {
        await deps.billing.charge(tx, { ...billed, envelopeId: envelope.id, envelopeTitle: envelope.title });
        await gateRecipients(tx, ctx, envelope, recipients);
      }
      const links = new Map(created.recipients.map((r) => [r.engineRecipientId, r.signingUrl]));
      // After the gating, so each gated recipient shows its verificationId.
      const gates = await sync.gatesOf(tx, recipients);
      return { dto: dtoOf(envelope, { recipients, fields: storedFields, links, gates }) };
    },

    /** The distribution job (envelope-send.ts). */
    distribute: sending.distribute,
    /** The expiry and purge jobs of a remote engine (remote-sweeps.ts). */
    expireOne: remote.expireOne,
    purgeOne: remote.purgeOne,
    /** A remote engine's cancellation, after the one recorded (remote-sweeps.ts). */
    cancelOne: remote.cancelOne,

    async get(db: DbOrTx, ctx: RequestContext, id: string): Promise<TEnvelope> {
      const envelope = await requireEnvelope(db, id, ownerOf(ctx));
      return (await toDto(db, [envelope], true))[0];
    },

    async list(db: DbOrTx, ctx: RequestContext, filter: { status?: string }, paging: Paging) {
      const { rows, total } = await repo.list(db, ownerOf(ctx), filter, paging);
      return { rows: await toDto(db, rows, false), total };
    },

    /** Live status: reads the engine and corrects the stored copy where they differ; no transaction while they agree. */
    async liveStatus(db: DbOrTx, ctx: RequestContext, id: string) {
      const owner = ownerOf(ctx);
      // An engine beside the copy (the local one) reads both in one statement.
      const copy = !UUID.test(id) ? undefined : engine.statusWithCopy ? await engine.statusWithCopy(db, id, owner) : await repo.findWithRecipients(db, id, owner);
      if (!copy) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
      // Pollers of one envelope do not queue on its lock: it is taken only to correct a stale copy.
      const { envelope, recipients, links, gates } = await sync.readInStep(db, copy, (tx) => requireEnvelope(tx, id, owner, true));
      return sync.statusDtoOf(envelope, { recipients, links, gates });
    },

    async send(tx: Tx, ctx: RequestContext, id: string, meta: TCreatePayload['meta']) {
      const envelope = await requireEnvelope(tx, id, ownerOf(ctx), true);
      requireDraft(envelope);
      return sending.send(tx, ctx, envelope, meta);
    },

    /** A remote engine's reminders, sent before the request's transaction opens (envelope-resend.ts); undefined for the local engine. */
    remindOutside: (db: Db, ctx: RequestContext, id: string) => (UUID.test(id) ? remindOutside(db, id, ownerOf(ctx), (tx) => requireEnvelope(tx, id, ownerOf(ctx), true)) : Promise.reject(new AppError('ENVELOPE_NOT_FOUND', 'No such envelope'))),

    /** `reminded`: what remindOutside sent (a remote engine), recorded here; else the engine reminds in this transaction. */
    async resend(tx: Tx, ctx: RequestContext, id: string, reminded?: Reminded) {
      let envelope = await requireEnvelope(tx, id, ownerOf(ctx), !reminded);
      let resentTo = reminded;
      if (!resentTo) {
        envelope = await syncFromEngine(tx, envelope);
        requireRemindable(envelope, await repo.recipients(tx, [envelope.id]));
        resentTo = await engine.resend(tx, envelope.engineEnvelopeId);
      }
      await deps.audit.customer(tx, ctx, { action: 'envelope.resend', resourceType: 'envelope', resourceId: envelope.id, metadata: { resentTo: resentTo.map((r) => r.email) } });
      return { success: true as const, resentTo };
    },

    /** DELETE: any state but COMPLETED ends CANCELLED; links stop working; the charge is refunded. */
    async cancel(tx: Tx, ctx: RequestContext | null, envelope: EnvelopeRow) {
      if (envelope.status === 'COMPLETED') throw new AppError('CANNOT_DELETE_COMPLETED', 'A completed envelope cannot be deleted');
      if (envelope.status === 'CANCELLED') return;
      if (engine.remote) {
        // The intent (DESIGN §4.13): CANCELLED, its event and the refund now; the job cancels at the engine once this commits (remote-sweeps.ts).
        await sync.reconcile(tx, envelope, { live: { status: 'CANCELLED', completedAt: envelope.completedAt, recipients: [] } });
        await remote.queue(tx, CANCEL_JOB, [envelope]);
        if (ctx) await deps.audit.customer(tx, ctx, { action: 'envelope.cancel', resourceType: 'envelope', resourceId: envelope.id });
        return;
      }
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

    async remove(tx: Tx, ctx: RequestContext, id: string) {
      await this.cancel(tx, ctx, await requireEnvelope(tx, id, ownerOf(ctx), true));
      return { success: true as const };
    },

    /** On the pool, in no transaction: the bytes come from the blob store, which must not be read with a transaction open (DESIGN §4.13). */
    async download(db: DbOrTx, ctx: RequestContext, id: string, version: DownloadVersion): Promise<{ bytes: Uint8Array; filename: string }> {
      const { engineEnvelopeId, filename } = downloadTarget(await requireEnvelope(db, id, ownerOf(ctx)), version);
      return { bytes: await enginePdf(engine, db, engineEnvelopeId, version), filename };
    },

    /** As download, as a stream from the store (the download routes); on the pool too. */
    async openDownload(db: DbOrTx, ctx: RequestContext, id: string, version: DownloadVersion): Promise<DocumentStream & { filename: string }> {
      const { engineEnvelopeId, filename } = downloadTarget(await requireEnvelope(db, id, ownerOf(ctx)), version);
      return { ...(await openEnginePdf(engine, db, engineEnvelopeId, version)), filename };
    },

    async addFields(tx: Tx, ctx: RequestContext, id: string, fields: TFieldInput[]) {
      return addDraftFields({ repo, engine, audit: deps.audit, fieldDto }, tx, ctx, await requireEnvelope(tx, id, ownerOf(ctx), true), fields);
    },

    async removeField(tx: Tx, ctx: RequestContext, id: string, fid: string) {
      const envelope = await requireEnvelope(tx, id, ownerOf(ctx), true);
      if (!/^\d{1,15}$/.test(fid)) throw new AppError('INVALID_FIELD_ID', 'The field id must be the integer fieldId returned when the field was added');
      if (envelope.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', `Fields can be removed only while the envelope is a DRAFT; it is ${envelope.status}`);
      const fieldId = Number(fid);
      if (!(await engine.removeField(tx, envelope.engineEnvelopeId, fieldId))) throw new AppError('INVALID_FIELD_ID', `No field ${fid} on this envelope`);
      await repo.deleteField(tx, envelope.id, fieldId);
      await deps.audit.customer(tx, ctx, { action: 'envelope.fields.remove', resourceType: 'envelope', resourceId: envelope.id, metadata: { fieldId } });
    },

    /**
     * Periodic: non-terminal envelopes past their signing window end EXPIRED, the longest overdue
     * first, each in its own savepoint. Returns how many expired; one whose signers all signed (its
     * seal pending) is the engine's to complete, not to expire.
     */
    async expireDue(tx: Tx, limit = 100): Promise<number> {
      // A remote engine: one job per envelope, which calls it with no transaction open (remote-sweeps.ts); answers how many were queued.
      if (engine.remote) return remote.queue(tx, EXPIRE_JOB, await repo.dueForExpiry(tx, limit));
      let expired = 0;
      for (const envelope of await repo.dueForExpiry(tx, limit)) {
        await eachRow(tx, 'expiry', envelope, async (sp) => {
          const synced = await syncFromEngine(sp, envelope);
          if (TERMINAL_STATUSES.includes(synced.status as EnvelopeStatus)) return;
          await engine.expire(sp, envelope.engineEnvelopeId);
          if ((await syncFromEngine(sp, synced)).status === 'EXPIRED') expired++;
        });
      }
      return expired;
    },

    /**
     * Periodic: the documents of ended envelopes past storageExpiresAt are deleted (download answers
     * 410 DOCUMENT_PURGED), the longest overdue first, each in its own savepoint. A live envelope's
     * are never deleted, whatever its dates: its seal needs the original.
     */
    async purgeDue(tx: Tx, limit = 100): Promise<number> {
      if (engine.remote) return remote.queue(tx, PURGE_JOB, await repo.dueForPurge(tx, limit, TERMINAL_STATUSES));
      let purged = 0;
      for (const envelope of await repo.dueForPurge(tx, limit, TERMINAL_STATUSES)) {
        await eachRow(tx, 'purge', envelope, async (sp) => {
          await engine.purge(sp, envelope.engineEnvelopeId);
          await repo.update(sp, envelope.id, { purgedAt: new Date() });
          purged++;
        });
      }
      return purged;
    },
  };
}

export type EnvelopesService = ReturnType<typeof createEnvelopesService>;
