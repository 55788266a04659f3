import type { TemplateField, TemplateSlot } from '../../db/schema/templates.js';
import type { EngineFieldInput, Role } from '../../engine/engine.js';
import { resolveRules, RULED_TYPES, ruleProblem, type PlannedRules } from '../../engine/field-rules.js';
import { AppError } from '../../errors.js';
import { isLocale, type Locale } from '../../i18n/locales.js';
import { invalid, placementDto } from '../envelopes/envelope-plan.js';
import type { TCreatePayload, TFieldInput } from '../envelopes/envelopes.schemas.js';
import { valueInvalid } from '../envelopes/field-rules.js';
import type { TemplateRow, TemplateSummaryRow } from './templates.repo.js';
import type { TFromTemplate, TTemplate, TTemplatePayload } from './templates.schemas.js';

/**
 * The template payload as an envelope create payload, so the envelopes' rules and field placement
 * (checkRecipients, planFields, requireSignatureFields) apply unchanged: each field's slot, named by
 * `recipientId` or `recipientEmail`, becomes the slot's email. `emails` is checkRecipients' answer.
 */
export function asEnvelopePayload(payload: TTemplatePayload, emails: Map<string, number>): TCreatePayload {
  const slots = payload.recipients;
  const fields = (payload.fields ?? []).map(({ recipientId, ...f }, i): TFieldInput => {
    const path = `payload.fields.${i}`;
    let index: number | undefined;
    if (recipientId !== undefined) {
      if (recipientId < 1 || recipientId > slots.length) throw new AppError('RECIPIENT_NOT_FOUND', `${path}.recipientId: there is no slot ${recipientId}; the template has ${slots.length} slot(s), ids 1 to ${slots.length}`);
      index = recipientId - 1;
    }
    if (f.recipientEmail !== undefined) {
      const byEmail = emails.get(f.recipientEmail.toLowerCase());
      if (byEmail === undefined) throw new AppError('RECIPIENT_NOT_FOUND', `${path}.recipientEmail: ${f.recipientEmail} is not a recipient slot of this template`);
      if (index !== undefined && index !== byEmail) throw invalid(`${path}.recipientEmail`, `names slot ${byEmail + 1}, but recipientId names slot ${recipientId}`);
      index = byEmail;
    }
    return { ...f, recipientEmail: slots[index!].email };
  });
  return { title: payload.title, recipients: payload.recipients, fields, meta: payload.meta };
}

export function slotsOf(payload: TTemplatePayload): TemplateSlot[] {
  return payload.recipients.map((r, i) => ({
    id: i + 1,
    email: r.email,
    name: r.name,
    role: r.role,
    signingOrder: r.signingOrder ?? null,
    verificationRequired: r.verificationRequired ?? false,
    locale: r.locale ?? null,
  }));
}

/** The planned fields as stored: each assigned to its slot, numbered 1..n. */
export function templateFields(fields: EngineFieldInput[], slots: TemplateSlot[]): TemplateField[] {
  const slotOf = new Map(slots.map((s) => [s.email.toLowerCase(), s.id]));
  return fields.map((f, i) => ({
    fieldId: i + 1,
    slot: slotOf.get(f.recipientEmail.toLowerCase())!,
    type: f.type,
    page: f.page,
    x: f.x,
    y: f.y,
    width: f.width,
    height: f.height,
    required: f.required,
    options: f.options,
    hide: f.hide,
    // A template's fields are numbered 1..n in this order: a condition on the batch names fieldId index + 1.
    rules: resolveRules(f.rules, fields.map((_, j) => j + 1)),
  }));
}

/**
 * The slot-mapping rule of from-template: every recipients[].id names a slot (else 400
 * INVALID_TEMPLATE_RECIPIENT_ID), no slot is named twice and no email appears twice (400
 * VALIDATION_ERROR), and every slot is named (else 404 RECIPIENT_NOT_FOUND for the first one left
 * out). Answers the envelope's recipients in slot order, with the slot's role, order and gate.
 */
export function mapSlots(slots: TemplateSlot[], people: TFromTemplate['recipients']): TCreatePayload['recipients'] {
  const bySlot = new Map<number, TFromTemplate['recipients'][number]>();
  const emails = new Set<string>();
  people.forEach((p, i) => {
    const path = `body.recipients.${i}`;
    if (!slots.some((s) => s.id === p.id)) {
      const message = `${p.id} is not a recipient slot of this template (its slots are ${slots.map((s) => s.id).join(', ')})`;
      throw new AppError('INVALID_TEMPLATE_RECIPIENT_ID', `${path}.id: ${message}`, { details: [{ path: `${path}.id`, message }] });
    }
    if (bySlot.has(p.id)) throw invalid(`${path}.id`, `slot ${p.id} is already mapped; each slot takes exactly one recipient`);
    if (emails.has(p.email.toLowerCase())) throw invalid(`${path}.email`, `duplicate recipient ${p.email}`);
    bySlot.set(p.id, p);
    emails.add(p.email.toLowerCase());
  });
  const missing = slots.find((s) => !bySlot.has(s.id));
  if (missing) throw new AppError('RECIPIENT_NOT_FOUND', `Template slot ${missing.id} (${missing.role} "${missing.name}") has no recipient: map every slot exactly once`, { slotId: missing.id });
  return slots.map((s) => ({
    email: bySlot.get(s.id)!.email,
    name: bySlot.get(s.id)!.name,
    role: s.role as Role,
    signingOrder: s.signingOrder ?? undefined,
    ...(s.verificationRequired ? { verificationRequired: true } : {}),
    ...(bySlot.get(s.id)!.locale || isLocale(s.locale) ? { locale: bySlot.get(s.id)!.locale ?? (s.locale as Locale) } : {}),
  }));
}

/**
 * The template's fields for an envelope: each slot's fields go to the person mapped to it, each
 * condition to the field of the batch it names, each `prefill` value (template fieldId → value, checked
 * by applyPrefill) onto its field as a read-only value.
 */
export function envelopeFields(row: Pick<TemplateRow, 'recipients' | 'fields'>, recipients: TCreatePayload['recipients'], prefill: Map<number, string> = new Map()): EngineFieldInput[] {
  const emailOf = new Map(row.recipients.map((s, i) => [s.id, recipients[i].email]));
  const indexOf = new Map(row.fields.map((f, i) => [f.fieldId, i]));
  return row.fields.map((f) => {
    const { visibleWhen, ...rest } = f.rules ?? {};
    const filled = prefill.get(f.fieldId);
    const rules: PlannedRules = { ...rest, ...(visibleWhen && indexOf.has(visibleWhen.fieldId) ? { visibleWhen: { index: indexOf.get(visibleWhen.fieldId)!, equals: visibleWhen.equals } } : {}), ...(filled !== undefined ? { value: filled, readOnly: true } : {}) };
    return { recipientEmail: emailOf.get(f.slot)!, type: f.type, page: f.page, x: f.x, y: f.y, width: f.width, height: f.height, required: f.required, options: f.options, hide: f.hide, rules: Object.keys(rules).length ? rules : null };
  });
}

/** A from-template call's prefill, checked: each key a TEXT or NUMBER field of the template, each value within that field's rules. */
export function checkPrefill(row: Pick<TemplateRow, 'fields'>, prefill: Record<string, string> | undefined): Map<number, string> {
  const out = new Map<number, string>();
  for (const [key, raw] of Object.entries(prefill ?? {})) {
    const path = `body.prefill.${key}`;
    const f = /^\d{1,15}$/.test(key) ? row.fields.find((x) => x.fieldId === Number(key)) : undefined;
    if (!f || !RULED_TYPES.has(f.type)) throw new AppError('FIELD_PREFILL_INVALID', `${path}: ${f ? `field ${key} is a ${f.type}; only TEXT and NUMBER fields take a prefilled value` : `the template has no field ${key}`}`, { details: [{ path, message: 'not a TEXT or NUMBER field of the template' }] });
    const value = raw.trim();
    const problem = value === '' ? { rule: 'minLength', message: 'must not be empty' } : ruleProblem(f.type, f.rules?.validation, value);
    if (problem) throw valueInvalid(path, problem);
    out.set(f.fieldId, value);
  }
  return out;
}

export function summaryDto(row: TemplateSummaryRow): Omit<TTemplate, 'fields'> {
  return {
    templateId: row.id,
    title: row.title,
    type: 'PRIVATE',
    recipients: row.recipients.map((s) => ({ id: s.id, email: s.email, name: s.name, role: s.role as Role, signingOrder: s.signingOrder, verificationRequired: s.verificationRequired, locale: isLocale(s.locale) ? s.locale : null })),
    detectedFromPlaceholders: row.detectedFromPlaceholders,
    meta: row.meta,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function templateDto(row: TemplateRow): TTemplate {
  const emailOf = new Map(row.recipients.map((s) => [s.id, s.email]));
  return {
    ...summaryDto(row),
    fields: row.fields.map((f) => ({
      fieldId: f.fieldId,
      id: String(f.fieldId),
      type: f.type,
      recipientId: f.slot,
      recipientEmail: emailOf.get(f.slot)!,
      ...placementDto(f),
      required: f.required,
      options: f.options,
      ...f.rules,
    })),
  };
}
