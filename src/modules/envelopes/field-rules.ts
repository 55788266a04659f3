import { CONDITION_TYPES, MAX_CONDITION_DEPTH, normalizeEquals, patternProblem, ruleProblem, type FieldRules, type PlannedRules } from '../../engine/field-rules.js';
import { AppError } from '../../errors.js';
import { conditionTypes } from './field-rules.schemas.js';
import type { TFieldInput } from './envelopes.schemas.js';

/** A field of a batch being planned: its input, the recipient it belongs to, and its path for details. */
export type RuleItem = { f: Pick<TFieldInput, 'type' | 'options' | 'ref' | 'label' | 'placeholder' | 'validation' | 'value' | 'readOnly' | 'visibleWhen'>; email: string; path: string };
/** A field that exists already (a draft's, a template's): its id, recipient (or slot, as a string), type, options and rules. */
export type ExistingField = { fieldId: number; owner: string; type: string; options: string[] | null; rules: FieldRules | null };

const conditionInvalid = (path: string, message: string) => new AppError('FIELD_CONDITION_INVALID', `${path}.visibleWhen: ${message}`, { details: [{ path: `${path}.visibleWhen`, message }] });

/**
 * The rules of a batch of new fields, checked against each other and the fields that exist: refs are
 * unique; each condition names a CHECKBOX, RADIO or DROPDOWN field of the same recipient (by a ref of
 * the batch or of an existing field, or an existing fieldId) and a value it can take; conditions form
 * no cycle and no chain deeper than MAX_CONDITION_DEPTH; patterns compile and are safe; a sender's
 * value meets the field's own validation. A SIGNATURE field is never conditional: every signer signs.
 * Answers each field's rules (null when it has none), a condition on the batch by `index`.
 */
export function planFieldRules(items: RuleItem[], existing: ExistingField[] = []): (PlannedRules | null)[] {
  const refs = new Map<string, { index: number } | { fieldId: number }>();
  for (const e of existing) if (e.rules?.ref) refs.set(e.rules.ref, { fieldId: e.fieldId });
  items.forEach(({ f, path }, index) => {
    if (f.ref === undefined) return;
    if (refs.has(f.ref)) throw conditionInvalid(path, `ref "${f.ref}" is used by another field; refs must be unique`);
    refs.set(f.ref, { index });
  });
  const existingById = new Map(existing.map((e) => [e.fieldId, e]));

  // Each new field's condition, resolved: its target as a node (batch index or existing id) and the value.
  type Node = { index: number } | { fieldId: number };
  const targets: (Node | null)[] = items.map(({ f, email, path }) => {
    const when = f.visibleWhen;
    if (!when) return null;
    if (f.type === 'SIGNATURE') throw conditionInvalid(path, 'a SIGNATURE field is always shown: every signer signs');
    const node: Node | undefined = typeof when.fieldId === 'string' ? refs.get(when.fieldId) : existingById.has(when.fieldId) ? { fieldId: when.fieldId } : undefined;
    if (!node) throw conditionInvalid(path, typeof when.fieldId === 'string' ? `no field has ref "${when.fieldId}"` : `no field ${when.fieldId} on this envelope`);
    const target = 'index' in node ? { type: items[node.index].f.type, options: items[node.index].f.options ?? null, owner: items[node.index].email.toLowerCase() } : { ...existingById.get(node.fieldId)!, owner: existingById.get(node.fieldId)!.owner.toLowerCase() };
    if (!CONDITION_TYPES.has(target.type)) throw conditionInvalid(path, `the controlling field is a ${target.type}; it must be one of ${conditionTypes}`);
    if (target.owner !== email.toLowerCase()) throw conditionInvalid(path, "the controlling field belongs to another recipient; a condition is on the same recipient's fields");
    if (normalizeEquals(target, when.equals) === null) {
      throw conditionInvalid(path, target.type === 'CHECKBOX' ? 'equals must be true, false or "checked" for a CHECKBOX' : `equals must be one of the options: ${(target.options ?? []).join(', ')}`);
    }
    return node;
  });

  // Depth of each chain (existing conditions are acyclic already; a new field is never an existing one's target).
  const depthOf = (node: Node, seen: Set<number>, path: string): number => {
    if ('fieldId' in node) {
      let depth = 0;
      for (let e = existingById.get(node.fieldId); e?.rules?.visibleWhen && depth <= MAX_CONDITION_DEPTH; e = existingById.get(e.rules.visibleWhen.fieldId)) depth++;
      return depth;
    }
    if (seen.has(node.index)) throw conditionInvalid(path, 'the conditions form a cycle');
    const next = targets[node.index];
    return next ? 1 + depthOf(next, new Set(seen).add(node.index), path) : 0;
  };
  items.forEach(({ path }, i) => {
    if (targets[i] && depthOf({ index: i }, new Set(), path) > MAX_CONDITION_DEPTH) throw conditionInvalid(path, `conditions may chain at most ${MAX_CONDITION_DEPTH} deep`);
  });

  return items.map(({ f, path }, i) => {
    const pattern = f.validation?.pattern;
    const problem = pattern === undefined ? null : patternProblem(pattern);
    if (problem) throw new AppError('FIELD_PATTERN_UNSAFE', `${path}.validation.pattern: ${problem}`, { details: [{ path: `${path}.validation.pattern`, message: problem }] });
    if (f.value !== undefined) {
      const bad = ruleProblem(f.type, f.validation, f.value);
      if (bad) throw valueInvalid(`${path}.value`, bad);
    }
    const node = targets[i];
    const visibleWhen = node && f.visibleWhen ? { ...node, equals: normalizeEquals('index' in node ? { type: items[node.index].f.type, options: items[node.index].f.options ?? null } : existingById.get(node.fieldId)!, f.visibleWhen.equals)! } : undefined;
    const rules: PlannedRules = Object.fromEntries(
      Object.entries({ ref: f.ref, label: f.label, placeholder: f.placeholder, validation: f.validation, value: f.value, readOnly: f.readOnly || undefined, visibleWhen }).filter(([, v]) => v !== undefined),
    );
    return Object.keys(rules).length ? rules : null;
  });
}

export const valueInvalid = (path: string, p: { rule: string; message: string }) => new AppError('FIELD_VALUE_INVALID', `${path}: ${p.message}`, { details: [{ path, rule: p.rule, message: p.message }] });

/** A stored field's rules as the API shows them (spread into the field's DTO). */
export const rulesDto = (rules: FieldRules | null | undefined): FieldRules => rules ?? {};
