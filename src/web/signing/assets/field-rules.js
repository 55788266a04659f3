// Field rules on the signing page, as the server applies them (src/engine/field-rules.ts): which fields a
// condition shows given the values so far, and what is wrong with a TEXT or NUMBER value under its
// validation. The server decides again on submit; this only shows the signer the same answer first.
import { t } from './i18n.js';

const MAX_DEPTH = 5;

/** Whether a controlling field's value meets a condition: an unticked CHECKBOX counts as "false". */
const meets = (type, value, equals) => (type === 'CHECKBOX' ? (value === 'true' ? 'true' : 'false') === equals : value === equals);

/**
 * The ids of the visible fields: one without a condition is; one with a condition is when the field it
 * names is visible and has the value (a hidden field's value counts as absent, so a chain hides together).
 */
export function visibleIds(fields, valueOf) {
  const byId = new Map(fields.map((f) => [f.fieldId, f]));
  const memo = new Map();
  const visible = (id, depth) => {
    if (memo.has(id)) return memo.get(id);
    const f = byId.get(id);
    const when = f?.visibleWhen;
    let result = Boolean(f);
    if (f && when) {
      const target = byId.get(when.fieldId);
      result = Boolean(target) && depth <= MAX_DEPTH && visible(when.fieldId, depth + 1) && meets(target.type, valueOf(when.fieldId), when.equals);
    }
    memo.set(id, result);
    return result;
  };
  return new Set(fields.filter((f) => visible(f.fieldId, 0)).map((f) => f.fieldId));
}

/** The message for a non-empty TEXT or NUMBER value that breaks its validation, or null. */
export function ruleMessage(field, value) {
  const v = field.validation;
  if (!v || value === '') return null;
  if (field.type === 'NUMBER') {
    const n = Number(value);
    if (v.min !== undefined && v.min !== null && n < v.min) return t('signing-fields.min', { min: v.min });
    if (v.max !== undefined && v.max !== null && n > v.max) return t('signing-fields.max', { max: v.max });
    return null;
  }
  const length = [...value].length;
  if (v.minLength !== undefined && v.minLength !== null && length < v.minLength) return t('signing-fields.minLength', { n: v.minLength });
  if (v.maxLength !== undefined && v.maxLength !== null && length > v.maxLength) return t('signing-fields.maxLength', { n: v.maxLength });
  if (v.pattern) {
    try {
      if (!new RegExp(`^(?:${v.pattern})$`, 'u').test(value)) return t('signing-fields.pattern');
    } catch {
      return null; // the server compiled it at create; a browser that cannot leaves the check to the server
    }
  }
  return null;
}

/** A caption above a field that has a label: visible text for everyone, not only for screen readers. */
export function labelCaption(field) {
  if (!field.label) return null;
  const caption = document.createElement('span');
  caption.className = 'field-label';
  caption.textContent = field.label;
  caption.setAttribute('aria-hidden', 'true');
  return caption;
}

/** The accessible name of a read-only field: its label (or noun) and the sender's value. */
export const readOnlyName = (label, value) => t('signing-fields.readOnly', { label, value });
