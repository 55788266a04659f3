import { z } from 'zod';
import { CONDITION_TYPES, MAX_PATTERN_LENGTH, MAX_PATTERNED_LENGTH, MAX_TEXT_LENGTH, RULED_TYPES } from '../../engine/field-rules.js';
import type { ErrorCode } from '../../errors.js';

/** What a route that takes fields with rules can answer (the OpenAPI lists them). */
export const FIELD_RULE_ERRORS = ['FIELD_CONDITION_INVALID', 'FIELD_PATTERN_UNSAFE', 'FIELD_VALUE_INVALID', 'NOT_SUPPORTED_BY_ENGINE'] as const satisfies ErrorCode[];

/** A caller's name for a field in a create payload (fields have no ids yet): letters first, so it never reads as a fieldId. */
export const ZFieldRef = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'a letter, then up to 63 letters, digits, _ or -')
  .describe('Your name for this field, unique in the payload: another field\'s visibleWhen.fieldId may name it (fields have no ids before the create). Shown back on the field.');

export const ZFieldValidation = z
  .object({
    pattern: z.string().min(1).max(MAX_PATTERN_LENGTH).optional().describe(`TEXT: a regular expression (JavaScript, u flag) the whole value must match; at most ${MAX_PATTERN_LENGTH} characters, matched on values of at most ${MAX_PATTERNED_LENGTH}; refused (FIELD_PATTERN_UNSAFE) when it could backtrack badly: nested quantifiers, a repeated alternation, more than three unbounded repetitions`),
    minLength: z.number().int().min(0).max(MAX_TEXT_LENGTH).optional().describe('TEXT: fewest characters'),
    maxLength: z.number().int().min(1).max(MAX_TEXT_LENGTH).optional().describe(`TEXT: most characters (at most ${MAX_TEXT_LENGTH} in any case)`),
    min: z.number().finite().optional().describe('NUMBER: smallest value'),
    max: z.number().finite().optional().describe('NUMBER: largest value'),
  })
  .strict()
  .describe('TEXT and NUMBER fields only; checked on the signer\'s value by the server (and by the signing page as they type)');

export const ZVisibleWhen = z
  .object({
    fieldId: z
      .union([ZFieldRef, z.number().int().min(1)])
      .describe("The controlling field: a ref in this payload, or the fieldId of a field that exists (a draft's added fields). It must be a CHECKBOX, RADIO or DROPDOWN of the same recipient"),
    equals: z.union([z.boolean(), z.string().min(1).max(200)]).describe('CHECKBOX: true, false or "checked"; RADIO or DROPDOWN: one of its options'),
  })
  .strict()
  .describe('The field is shown, required and stamped only while the controlling field has this value; otherwise it is hidden, not required, not stamped, and a value sent for it is refused (FIELD_HIDDEN)');

/** The rule properties a field input may carry (spread into ZFieldInput). */
export const fieldRuleShape = {
  ref: ZFieldRef.optional(),
  label: z.string().trim().min(1).max(200).optional().describe('TEXT and NUMBER: what the signing page shows as the field\'s name'),
  placeholder: z.string().max(200).optional().describe('TEXT and NUMBER: the hint shown in the empty field'),
  validation: ZFieldValidation.optional(),
  value: z.string().trim().min(1).max(MAX_TEXT_LENGTH).optional().describe("TEXT and NUMBER: the sender's value, checked against validation; with readOnly it is stamped as given and the signer cannot change it, otherwise it is where the signer starts"),
  readOnly: z.boolean().optional().describe('TEXT and NUMBER with a value: the signer cannot change it (FIELD_READ_ONLY)'),
  visibleWhen: ZVisibleWhen.optional(),
};

type RuleProps = { type: string; label?: string; placeholder?: string; validation?: z.infer<typeof ZFieldValidation>; value?: string; readOnly?: boolean; visibleWhen?: unknown };

/** The checks on one field's rules that need no other field (ZFieldInput's superRefine calls it). */
export function fieldRuleIssues(f: RuleProps, ctx: z.RefinementCtx): void {
  const ruled = RULED_TYPES.has(f.type);
  for (const key of ['label', 'placeholder', 'validation', 'value', 'readOnly'] as const) {
    if (f[key] !== undefined && !ruled) ctx.addIssue({ code: 'custom', path: [key], message: `${key} is for TEXT and NUMBER fields; this one is a ${f.type}` });
  }
  const v = f.validation;
  if (v && ruled) {
    const text = f.type === 'TEXT';
    for (const key of ['pattern', 'minLength', 'maxLength'] as const) if (v[key] !== undefined && !text) ctx.addIssue({ code: 'custom', path: ['validation', key], message: `${key} is for TEXT fields` });
    for (const key of ['min', 'max'] as const) if (v[key] !== undefined && text) ctx.addIssue({ code: 'custom', path: ['validation', key], message: `${key} is for NUMBER fields` });
    if (v.minLength !== undefined && v.maxLength !== undefined && v.minLength > v.maxLength) ctx.addIssue({ code: 'custom', path: ['validation', 'minLength'], message: 'minLength must not exceed maxLength' });
    if (v.pattern !== undefined && v.maxLength !== undefined && v.maxLength > MAX_PATTERNED_LENGTH) ctx.addIssue({ code: 'custom', path: ['validation', 'maxLength'], message: `a field with a pattern takes at most ${MAX_PATTERNED_LENGTH} characters` });
    if (v.min !== undefined && v.max !== undefined && v.min > v.max) ctx.addIssue({ code: 'custom', path: ['validation', 'min'], message: 'min must not exceed max' });
  }
  if (f.readOnly && f.value === undefined) ctx.addIssue({ code: 'custom', path: ['readOnly'], message: 'a read-only field needs the value the sender sets' });
}

/** The condition types, for messages. */
export const conditionTypes = [...CONDITION_TYPES].join(', ');

/** The rules as a stored field shows them (each key only when set; a condition by fieldId, equals as a string). */
export const fieldRuleOutShape = {
  ref: z.string().optional(),
  label: z.string().optional(),
  placeholder: z.string().optional(),
  validation: ZFieldValidation.optional(),
  value: z.string().optional().describe("The sender's value (read-only when readOnly)"),
  readOnly: z.boolean().optional(),
  visibleWhen: z.object({ fieldId: z.number().int(), equals: z.string() }).optional().describe('Shown only while field fieldId has this value ("true"/"false" for a CHECKBOX)'),
};
