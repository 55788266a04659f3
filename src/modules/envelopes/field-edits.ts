import type { RequestContext } from '../../context.js';
import type { Tx } from '../../db/client.js';
import type { SigningEngine } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import type { AuditService } from '../audit/audit.service.js';
import { invalid } from './envelope-plan.js';
import type { EnvelopesRepo, StoredFieldRow } from './envelopes.repo.js';
import type { TFieldPatch } from './envelopes.schemas.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type FieldDto = (f: StoredFieldRow) => unknown;

/**
 * Moves and resizes a draft's field (PATCH /v1/envelopes/{id}/fields/{fieldId}; the field editor saves
 * through it). The field keeps its id, type and recipient: what a caller already holds stays valid. The
 * engine's copy and ours change in the one transaction, so the stamp lands where the stored copy says.
 */
export function createFieldEdits(deps: { repo: Pick<EnvelopesRepo, 'find' | 'fields' | 'updateFieldPlacement'>; engine: SigningEngine; audit: Pick<AuditService, 'customer'>; fieldDto: FieldDto }) {
  return {
    async update(tx: Tx, ctx: RequestContext, id: string, fid: string, patch: TFieldPatch) {
      const envelope = UUID.test(id) ? await deps.repo.find(tx, id, { customerId: ctx.actor.customerId, mode: ctx.actor.mode }, true) : undefined;
      if (!envelope) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
      if (!/^\d{1,15}$/.test(fid)) throw new AppError('INVALID_FIELD_ID', 'The field id must be the integer fieldId returned when the field was added');
      if (envelope.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', `Fields can be changed only while the envelope is a DRAFT; it is ${envelope.status}`);
      if (!deps.engine.updateField) throw new AppError('NOT_SUPPORTED_BY_ENGINE', 'This signing engine cannot move a field: remove it and add it again');
      const fieldId = Number(fid);
      const current = (await deps.repo.fields(tx, [envelope.id])).find((f) => f.engineFieldId === fieldId);
      if (!current) throw new AppError('INVALID_FIELD_ID', `No field ${fid} on this envelope`);
      const next = {
        page: patch.page ?? current.page,
        x: patch.positionXPercent ?? patch.positionX ?? current.x,
        y: patch.positionYPercent ?? patch.positionY ?? current.y,
        width: patch.widthPercent ?? patch.width ?? current.width,
        height: patch.heightPercent ?? patch.height ?? current.height,
      };
      // Checked on the merged placement: moving a wide field right must not push it off the page.
      if (next.page > envelope.pageCount) throw invalid('body.page', `the document has ${envelope.pageCount} page(s)`);
      if (next.x + next.width > 100.000001) throw invalid('body.widthPercent', `positionX + width must be within the page (<= 100); they would be ${next.x} + ${next.width}`);
      if (next.y + next.height > 100.000001) throw invalid('body.heightPercent', `positionY + height must be within the page (<= 100); they would be ${next.y} + ${next.height}`);
      if (!(await deps.engine.updateField(tx, envelope.engineEnvelopeId, fieldId, next))) throw new AppError('INVALID_FIELD_ID', `No field ${fid} on this envelope`);
      const row = await deps.repo.updateFieldPlacement(tx, envelope.id, fieldId, next);
      await deps.audit.customer(tx, ctx, { action: 'envelope.fields.update', resourceType: 'envelope', resourceId: envelope.id, metadata: { fieldId } });
      return deps.fieldDto(row!);
    },
  };
}

export type FieldEdits = ReturnType<typeof createFieldEdits>;
