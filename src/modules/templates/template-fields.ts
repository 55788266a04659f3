import type { TemplateField } from '../../db/schema/templates.js';
import { AppError } from '../../errors.js';
import { resolveRules } from '../../engine/field-rules.js';
import { fieldToEngine, invalid } from '../envelopes/envelope-plan.js';
import { planFieldRules } from '../envelopes/field-rules.js';
import type { TFieldPatch } from '../envelopes/envelopes.schemas.js';
import type { TemplateRow } from './templates.repo.js';
import type { TTemplateFieldInput } from './templates.schemas.js';

/** The create payload's own bound: a template never holds more fields than it could be made with. */
export const MAX_TEMPLATE_FIELDS = 500;

/** The slot a field names, by `recipientId` or `recipientEmail` (both must agree), as at create. */
function slotOf(row: TemplateRow, f: TTemplateFieldInput, path: string): number {
  const slots = row.recipients;
  let slot: number | undefined;
  if (f.recipientId !== undefined) {
    if (!slots.some((s) => s.id === f.recipientId)) throw new AppError('RECIPIENT_NOT_FOUND', `${path}.recipientId: there is no slot ${f.recipientId}; the template's slots are ${slots.map((s) => s.id).join(', ')}`);
    slot = f.recipientId;
  }
  if (f.recipientEmail !== undefined) {
    const byEmail = slots.find((s) => s.email.toLowerCase() === f.recipientEmail!.toLowerCase());
    if (!byEmail) throw new AppError('RECIPIENT_NOT_FOUND', `${path}.recipientEmail: ${f.recipientEmail} is not a recipient slot of this template`);
    if (slot !== undefined && slot !== byEmail.id) throw invalid(`${path}.recipientEmail`, `names slot ${byEmail.id}, but recipientId names slot ${slot}`);
    slot = byEmail.id;
  }
  return slot!;
}

function checkOnPage(row: TemplateRow, p: { page: number; x: number; y: number; width: number; height: number }, path: string) {
  if (p.page > row.pages.length) throw invalid(`${path}.page`, `the document has ${row.pages.length} page(s)`);
  if (p.x + p.width > 100.000001) throw invalid(`${path}.widthPercent`, `positionX + width must be within the page (<= 100); they would be ${p.x} + ${p.width}`);
  if (p.y + p.height > 100.000001) throw invalid(`${path}.heightPercent`, `positionY + height must be within the page (<= 100); they would be ${p.y} + ${p.height}`);
}

const fieldIndex = (row: TemplateRow, fid: string): number => {
  if (!/^\d{1,15}$/.test(fid)) throw new AppError('INVALID_FIELD_ID', 'The field id must be the integer fieldId of one of the template\'s fields');
  const i = row.fields.findIndex((f) => f.fieldId === Number(fid));
  if (i < 0) throw new AppError('INVALID_FIELD_ID', `No field ${fid} on this template`);
  return i;
};

/**
 * The template field edits (the field editor saves through them), as pure list changes: the service
 * locks the row, applies one, and writes the list back. New fields are numbered after the highest id
 * kept, so the ids of the fields that stay never change (the row keeps no counter: removing the
 * highest-numbered field frees its id for the next one added).
 */
export function addTemplateFields(row: TemplateRow, input: TTemplateFieldInput[]): { fields: TemplateField[]; added: TemplateField[] } {
  if (row.fields.length + input.length > MAX_TEMPLATE_FIELDS) throw invalid('body.fields', `a template holds at most ${MAX_TEMPLATE_FIELDS} fields; it has ${row.fields.length}`);
  let next = row.fields.reduce((m, f) => Math.max(m, f.fieldId), 0);
  const placed = input.map((f, i) => {
    const path = `body.fields.${i}`;
    const slot = slotOf(row, f, path);
    const { recipientEmail: _email, hide: _hide, rules: _rules, ...p } = fieldToEngine(f, '');
    checkOnPage(row, p, path);
    return { fieldId: ++next, slot, ...p, hide: null };
  });
  // Conditions may name a field the template has (its fieldId or ref) or one of the batch (its ref), of the same slot.
  const existing = row.fields.map((f) => ({ fieldId: f.fieldId, owner: String(f.slot), type: f.type, options: f.options, rules: f.rules ?? null }));
  const rules = planFieldRules(input.map((f, i) => ({ f, email: String(placed[i].slot), path: `body.fields.${i}` })), existing);
  const added: TemplateField[] = placed.map((f, i) => ({ ...f, rules: resolveRules(rules[i], placed.map((x) => x.fieldId)) }));
  return { fields: [...row.fields, ...added], added };
}

export function updateTemplateField(row: TemplateRow, fid: string, patch: TFieldPatch): { fields: TemplateField[]; updated: TemplateField } {
  const i = fieldIndex(row, fid);
  const current = row.fields[i];
  const updated: TemplateField = {
    ...current,
    page: patch.page ?? current.page,
    x: patch.positionXPercent ?? patch.positionX ?? current.x,
    y: patch.positionYPercent ?? patch.positionY ?? current.y,
    width: patch.widthPercent ?? patch.width ?? current.width,
    height: patch.heightPercent ?? patch.height ?? current.height,
  };
  // Checked on the merged placement: moving a wide field right must not push it off the page.
  checkOnPage(row, updated, 'body');
  return { fields: row.fields.map((f, j) => (j === i ? updated : f)), updated };
}

/** Every SIGNER slot keeps a SIGNATURE field, as at create, so every envelope made from the template can be sent. */
export function removeTemplateField(row: TemplateRow, fid: string): TemplateField[] {
  const i = fieldIndex(row, fid);
  const gone = row.fields[i];
  const fields = row.fields.filter((_, j) => j !== i);
  const dependents = fields.filter((f) => f.rules?.visibleWhen?.fieldId === gone.fieldId).map((f) => f.fieldId);
  if (dependents.length) throw new AppError('FIELD_HAS_DEPENDENTS', `Field ${fid} controls the visibleWhen of field(s) ${dependents.join(', ')}; remove or change those first`, { fieldIds: dependents });
  const slot = row.recipients.find((s) => s.id === gone.slot);
  if (gone.type === 'SIGNATURE' && slot?.role === 'SIGNER' && !fields.some((f) => f.slot === gone.slot && f.type === 'SIGNATURE')) {
    throw new AppError('VALIDATION_ERROR', `Field ${fid} is the last SIGNATURE field of SIGNER slot ${slot.id}; add another for that slot before removing it`, { details: [{ path: 'fieldId', message: 'last SIGNATURE field of a SIGNER slot' }] });
  }
  return fields;
}
