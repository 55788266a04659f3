import { randomUUID } from 'node:crypto';
import type { Paging, RequestContext } from '../../context.js';
import type { DbOrTx, Tx } from '../../db/client.js';
import type { TemplateField, TemplateSlot } from '../../db/schema/templates.js';
import { AppError } from '../../errors.js';
import { enqueue } from '../../jobs/queue.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { PreparedDocument, UploadPart } from '../../pdf/types.js';
import { putContent, type BlobStorage } from '../../providers/storage/index.js';
import type { AuditService } from '../audit/audit.service.js';
import { checkRecipients, planFields, requireSignatureFields } from '../envelopes/envelope-plan.js';
import type { Owner } from '../envelopes/envelopes.repo.js';
import type { TCreatePayload, TFieldPatch } from '../envelopes/envelopes.schemas.js';
import type { CreatePlan, EnvelopesService } from '../envelopes/envelopes.service.js';
import { asEnvelopePayload, checkPrefill, envelopeFields, mapSlots, slotsOf, summaryDto, templateDto, templateFields } from './template-plan.js';
import { DELETE_DOCUMENT_JOB } from './templates.jobs.js';
import type { TemplateRow, TemplatesRepo } from './templates.repo.js';
import type { TFromTemplate, TTemplateFieldInput, TTemplatePayload, TUpdateTemplate } from './templates.schemas.js';
import { addTemplateFields, removeTemplateField, updateTemplateField } from './template-fields.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const ownerOf = (ctx: RequestContext): Owner => ({ customerId: ctx.actor.customerId, mode: ctx.actor.mode });
export const templateDocumentKey = (templateId: string) => `templates/${templateId}/document.pdf`;

/** A template create, checked, parsed and stored before its transaction opens. */
export type TemplatePlan = { id: string; documentKey: string; payload: TTemplatePayload; document: PreparedDocument; slots: TemplateSlot[]; fields: TemplateField[]; fromMarkers: boolean };

/** An envelope from a template, planned by the envelope service, with the template it came from. */
export type FromTemplatePlan = { templateId: string; envelope: CreatePlan };

export type TemplatesServiceDeps = {
  repo: TemplatesRepo;
  storage: Pick<BlobStorage, 'put' | 'putFile' | 'get'>;
  audit: AuditService;
  /** Parses the upload in the sandbox, as for envelopes; `owner` is whose turn it is in the parse queue. */
  prepareDocument: (parts: UploadPart[], owner: string) => Promise<PreparedDocument>;
  envelopes: Pick<EnvelopesService, 'plan' | 'create' | 'commitPlanned'>;
};

/**
 * Templates are Signet's own (not engine documents): the PDF is a blob under templates/<id>/, the
 * slots and fields JSON on the row. An envelope made from one gets its own copy of the PDF from the
 * engine, so deleting the template never touches an envelope.
 */
export function createTemplatesService(deps: TemplatesServiceDeps) {
  const { repo } = deps;

  async function requireTemplate(db: DbOrTx, id: string, owner: Owner, opts: { invalid: 'INVALID_ID' | 'INVALID_TEMPLATE_ID'; lock?: boolean }): Promise<TemplateRow> {
    if (!UUID.test(id)) throw new AppError(opts.invalid, `The template id must be a UUID; got ${JSON.stringify(id.slice(0, 60))}`);
    const row = await repo.find(db, id.toLowerCase(), owner, opts.lock);
    if (!row) throw new AppError('TEMPLATE_NOT_FOUND', 'No such template');
    return row;
  }

  return {
    /**
     * Checks a template create, cheapest refusal first (the slot rules need no document), parses the
     * PDF in the sandbox, places the fields as an envelope would, and stores the PDF before the row's
     * transaction opens: a rollback leaves an unreferenced blob (swept), never a row without its file.
     * Every SIGNER slot needs a SIGNATURE field, as a sent envelope does, so every envelope made from
     * the template can be sent.
     */
    async plan(ctx: RequestContext, input: { payload: TTemplatePayload; parts: UploadPart[] }): Promise<TemplatePlan> {
      const { payload } = input;
      const emails = checkRecipients(payload);
      const asEnvelope = asEnvelopePayload(payload, emails);
      const document = await deps.prepareDocument(input.parts, ctx.actor.customerId);
      const planned = planFields(asEnvelope, emails, document, 'file');
      requireSignatureFields(payload.recipients, planned.fields, (i) => `payload.recipients.${i}`);
      const slots = slotsOf(payload);
      const id = randomUUID();
      const documentKey = templateDocumentKey(id);
      await putContent(deps.storage, documentKey, document);
      return { id, documentKey, payload, document, slots, fields: templateFields(planned.fields, slots), fromMarkers: planned.fromMarkers };
    },

    async create(tx: Tx, ctx: RequestContext, plan: TemplatePlan) {
      const row = await repo.insert(tx, {
        id: plan.id,
        customerId: ctx.actor.customerId,
        mode: ctx.actor.mode,
        title: plan.payload.title,
        meta: plan.payload.meta ?? {},
        documentKey: plan.documentKey,
        documentSha256: plan.document.sha256,
        pages: plan.document.info.pages,
        recipients: plan.slots,
        fields: plan.fields,
        detectedFromPlaceholders: plan.fromMarkers,
      });
      await deps.audit.customer(tx, ctx, { action: 'template.create', resourceType: 'template', resourceId: row.id, metadata: { slots: plan.slots.length, fields: plan.fields.length } });
      return templateDto(row);
    },

    async list(db: DbOrTx, ctx: RequestContext, paging: Paging) {
      const { rows, total } = await repo.list(db, ownerOf(ctx), paging);
      return { rows: rows.map(summaryDto), total };
    },

    async get(db: DbOrTx, ctx: RequestContext, id: string) {
      return templateDto(await requireTemplate(db, id, ownerOf(ctx), { invalid: 'INVALID_ID' }));
    },

    /** Title and meta only: the slots and PDF never change after the create (fields change through the field routes). `meta` replaces the stored meta. */
    async update(tx: Tx, ctx: RequestContext, id: string, input: TUpdateTemplate) {
      const current = await requireTemplate(tx, id, ownerOf(ctx), { invalid: 'INVALID_ID', lock: true });
      const row = await repo.update(tx, current.id, { ...(input.title !== undefined ? { title: input.title } : {}), ...(input.meta !== undefined ? { meta: input.meta } : {}) });
      await deps.audit.customer(tx, ctx, { action: 'template.update', resourceType: 'template', resourceId: row.id, metadata: { fields: Object.keys(input) } });
      return { templateId: row.id, title: row.title, meta: row.meta, updatedAt: row.updatedAt.toISOString() };
    },

    /** The stored PDF, for the dashboard's field editor (small: bounded by the create's upload limit). */
    async document(db: DbOrTx, ctx: RequestContext, id: string): Promise<Uint8Array> {
      const row = await requireTemplate(db, id, ownerOf(ctx), { invalid: 'INVALID_ID' });
      const bytes = await deps.storage.get(row.documentKey);
      if (!bytes) throw new Error(`template ${row.id}: the stored document ${row.documentKey} is missing`);
      return bytes;
    },

    /** The field editor's saves (POST/PATCH/DELETE /v1/templates/{id}/fields…): one locked read, one list rewrite, one audit row. */
    async addFields(tx: Tx, ctx: RequestContext, id: string, input: TTemplateFieldInput[]) {
      const current = await requireTemplate(tx, id, ownerOf(ctx), { invalid: 'INVALID_ID', lock: true });
      const { fields, added } = addTemplateFields(current, input);
      const row = await repo.setFields(tx, current.id, fields);
      await deps.audit.customer(tx, ctx, { action: 'template.fields.add', resourceType: 'template', resourceId: row.id, metadata: { fields: added.length } });
      const ids = new Set(added.map((f) => f.fieldId));
      return { fields: templateDto(row).fields.filter((f) => ids.has(f.fieldId)) };
    },

    async updateField(tx: Tx, ctx: RequestContext, id: string, fid: string, patch: TFieldPatch) {
      const current = await requireTemplate(tx, id, ownerOf(ctx), { invalid: 'INVALID_ID', lock: true });
      const { fields, updated } = updateTemplateField(current, fid, patch);
      const row = await repo.setFields(tx, current.id, fields);
      await deps.audit.customer(tx, ctx, { action: 'template.fields.update', resourceType: 'template', resourceId: row.id, metadata: { fieldId: updated.fieldId } });
      return templateDto(row).fields.find((f) => f.fieldId === updated.fieldId)!;
    },

    async removeField(tx: Tx, ctx: RequestContext, id: string, fid: string): Promise<void> {
      const current = await requireTemplate(tx, id, ownerOf(ctx), { invalid: 'INVALID_ID', lock: true });
      await repo.setFields(tx, current.id, removeTemplateField(current, fid));
      await deps.audit.customer(tx, ctx, { action: 'template.fields.remove', resourceType: 'template', resourceId: current.id, metadata: { fieldId: Number(fid) } });
    },

    /** Deletes the row; its PDF goes in a job after the commit (envelopes made from it hold their own copy). */
    async remove(tx: Tx, ctx: RequestContext, id: string): Promise<void> {
      const current = await requireTemplate(tx, id, ownerOf(ctx), { invalid: 'INVALID_ID', lock: true });
      await repo.delete(tx, current.id);
      await enqueue(tx, { type: DELETE_DOCUMENT_JOB, payload: { key: current.documentKey } });
      await deps.audit.customer(tx, ctx, { action: 'template.delete', resourceType: 'template', resourceId: current.id });
    },

    /**
     * Plans an envelope from a template, cheapest refusal first: the id, the row, the slot mapping,
     * then the envelope service's rules (signing window, retention, balance); the stored PDF is read
     * last and checked against its SHA-256. The template's meta is the default, the call's overrides it.
     */
    async planEnvelope(db: DbOrTx, ctx: RequestContext, id: string, input: TFromTemplate): Promise<FromTemplatePlan> {
      const row = await requireTemplate(db, id, ownerOf(ctx), { invalid: 'INVALID_TEMPLATE_ID' });
      const prefill = checkPrefill(row, input.prefill);
      const payload: TCreatePayload = {
        title: input.title ?? row.title,
        recipients: mapSlots(row.recipients, input.recipients),
        storageExpiryDays: input.storageExpiryDays,
        expiresAt: input.expiresAt,
        meta: { ...row.meta, ...input.meta },
        reminders: input.reminders,
        expiryWarningDays: input.expiryWarningDays,
        allowDelegation: input.allowDelegation,
      };
      const prepared = async () => {
        const bytes = await deps.storage.get(row.documentKey);
        if (!bytes && !(await repo.find(db, row.id, ownerOf(ctx)))) throw new AppError('TEMPLATE_NOT_FOUND', 'No such template');
        if (!bytes || sha256Hex(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)) !== row.documentSha256) {
          throw new Error(`template ${row.id}: the stored document ${row.documentKey} is missing or does not match its SHA-256`);
        }
        // Parsed and checked when the template was made: its pages and fields are stored, no marker is placed again.
        const document: PreparedDocument = { bytes, info: { pageCount: row.pages.length, pages: row.pages }, markers: [], badMarkers: [], sha256: row.documentSha256 };
        return { document, fields: envelopeFields(row, payload.recipients, prefill), fromMarkers: row.detectedFromPlaceholders };
      };
      const envelope = await deps.envelopes.plan(ctx, { payload, draft: !input.sendImmediately, operation: 'envelope_from_template', prepared });
      return { templateId: row.id, envelope };
    },

    /** The envelope service's commitPlanned for an envelope planned from a template: a failed commit undoes the engine's stage. */
    commitPlanned<T>(db: DbOrTx, plan: FromTemplatePlan, commit: () => Promise<T>): Promise<T> {
      return deps.envelopes.commitPlanned(db, plan.envelope, commit);
    },

    /** Creates (and, unless a draft, charges and sends) the planned envelope; a draft's later send is charged as any draft's. */
    async createEnvelope(tx: Tx, ctx: RequestContext, plan: FromTemplatePlan) {
      // Written with the envelope's rows, before the charge (the transaction's last write).
      const used = deps.audit.customerStatement(ctx, { action: 'template.use', resourceType: 'template', resourceId: plan.templateId, metadata: { envelopeId: plan.envelope.envelopeId } });
      return (await deps.envelopes.create(tx, ctx, plan.envelope, [used])).dto;
    },
  };
}

export type TemplatesService = ReturnType<typeof createTemplatesService>;
