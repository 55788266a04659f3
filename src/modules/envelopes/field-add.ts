import type { RequestContext } from '../../context.js';
import type { Tx } from '../../db/client.js';
import type { SigningEngine } from '../../engine/engine.js';
import { resolveRules } from '../../engine/field-rules.js';
import { AppError } from '../../errors.js';
import type { AuditService } from '../audit/audit.service.js';
import { fieldToEngine, invalid } from './envelope-plan.js';
import type { EnvelopeRow, EnvelopesRepo, StoredFieldRow } from './envelopes.repo.js';
import type { TFieldInput } from './envelopes.schemas.js';
import { planFieldRules } from './field-rules.js';

/**
 * Adds fields to a draft (POST /v1/envelopes/{id}/fields), the envelope already found and locked: each
 * names one of its recipients and a page it has; their conditions may name a field the draft has (by
 * fieldId or ref) or one of the batch (by ref). The engine's rows and ours in the caller's transaction.
 */
export async function addDraftFields<D>(
  deps: { repo: Pick<EnvelopesRepo, 'recipients' | 'fields' | 'insertFields'>; engine: SigningEngine; audit: Pick<AuditService, 'customer'>; fieldDto: (f: StoredFieldRow) => D },
  tx: Tx,
  ctx: RequestContext,
  envelope: EnvelopeRow,
  fields: TFieldInput[],
) {
  if (envelope.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', `Fields can be added only while the envelope is a DRAFT; it is ${envelope.status}`);
  const recipients = await deps.repo.recipients(tx, [envelope.id]);
  const placed = fields.map((f, i) => {
    const r = recipients.find((x) => x.email.toLowerCase() === f.recipientEmail!.toLowerCase());
    if (!r) throw new AppError('RECIPIENT_NOT_FOUND', `fields.${i}.recipientEmail: ${f.recipientEmail} is not a recipient of this envelope`);
    if (f.page > envelope.pageCount) throw invalid(`body.fields.${i}.page`, `the document has ${envelope.pageCount} page(s)`);
    return fieldToEngine(f, r.email);
  });
  const existing = (await deps.repo.fields(tx, [envelope.id])).map((f) => ({ fieldId: f.engineFieldId, owner: f.recipientEmail, type: f.type, options: f.options, rules: f.rules }));
  const rules = planFieldRules(fields.map((f, i) => ({ f, email: placed[i].recipientEmail, path: `body.fields.${i}` })), existing);
  const engineFields = placed.map((f, i) => ({ ...f, rules: rules[i] }));
  const created = await deps.engine.addFields(tx, envelope.engineEnvelopeId, engineFields);
  const ids = created.map((c) => c.engineFieldId);
  const rows = await deps.repo.insertFields(
    tx,
    created.map((c, i) => ({ envelopeId: envelope.id, engineFieldId: c.engineFieldId, recipientEmail: c.recipientEmail, type: engineFields[i].type, page: engineFields[i].page, x: engineFields[i].x, y: engineFields[i].y, width: engineFields[i].width, height: engineFields[i].height, options: engineFields[i].options, rules: resolveRules(engineFields[i].rules, ids) })),
  );
  await deps.audit.customer(tx, ctx, { action: 'envelope.fields.add', resourceType: 'envelope', resourceId: envelope.id, metadata: { count: rows.length } });
  return { fields: rows.map(deps.fieldDto) };
}
