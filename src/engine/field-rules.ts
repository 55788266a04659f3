import safeRegex from 'safe-regex2';
import type { FieldType } from '../pdf/types.js';

/**
 * A field's rules (issue 37.5), as the engines store them and GET /v1/envelopes/{id} shows them:
 * a caller's `ref`, a label and placeholder, validation and a sender's value for TEXT and NUMBER
 * fields, and a condition on a CHECKBOX, RADIO or DROPDOWN field of the same recipient. A condition's
 * `fieldId` is the controlling field's id (the engine's field id on an envelope, the template's field
 * id on a template); `equals` is "true" or "false" for a CHECKBOX, one of the options otherwise.
 */
export type FieldValidation = { pattern?: string; minLength?: number; maxLength?: number; min?: number; max?: number };
export type FieldCondition = { fieldId: number; equals: string };
export type FieldRules = {
  ref?: string;
  label?: string;
  placeholder?: string;
  validation?: FieldValidation;
  /** The sender's value: stamped as given when readOnly, else the signer's starting value. */
  value?: string;
  readOnly?: boolean;
  visibleWhen?: FieldCondition;
};

/**
 * Rules as a create or an added batch hands them to the engine: a condition names either a field that
 * exists (`fieldId`) or one of the same batch by its place in it (`index`), whose id the engine learns
 * when it writes the batch.
 */
export type PlannedRules = Omit<FieldRules, 'visibleWhen'> & { visibleWhen?: FieldCondition | { index: number; equals: string } };

export const CONDITION_TYPES: ReadonlySet<string> = new Set(['CHECKBOX', 'RADIO', 'DROPDOWN']);
export const RULED_TYPES: ReadonlySet<string> = new Set(['TEXT', 'NUMBER']);
/** The longest chain of conditions (a field shown by a field shown by …): bounded work per completion. */
export const MAX_CONDITION_DEPTH = 5;
export const MAX_PATTERN_LENGTH = 200;
/** What the server accepts in a TEXT field at all, and so the most a pattern ever runs on. */
export const MAX_TEXT_LENGTH = 1000;
export const MAX_NUMBER_LENGTH = 40;
/** The most a pattern runs on: with at most three wide quantifiers, about 200³ steps in the worst case. */
export const MAX_PATTERNED_LENGTH = 200;
export const NUMBER_PATTERN = /^-?\d+(\.\d+)?$/;

/** A pattern matches the whole value, as an HTML pattern attribute does (the page checks with the same expression). */
export const compilePattern = (pattern: string) => new RegExp(`^(?:${pattern})$`, 'u');

/** Why a pattern is refused (it does not compile, or its star height makes backtracking explode), or null. */
export function patternProblem(pattern: string): string | null {
  if (pattern.length > MAX_PATTERN_LENGTH) return `at most ${MAX_PATTERN_LENGTH} characters`;
  let re: RegExp;
  try {
    re = compilePattern(pattern);
  } catch (err) {
    return `does not compile: ${(err as Error).message}`;
  }
  if (!safeRegex(re, { limit: 25 })) return 'may take exponential time on some inputs (nested quantifiers); simplify it';
  return backtrackingProblem(pattern);
}

/** How many times a quantifier at the start of `rest` lets its atom repeat (0 when there is none); unbounded counts as MAX_PATTERNED_LENGTH. */
function repeats(rest: string): { times: number; length: number } {
  if (rest[0] === '*' || rest[0] === '+') return { times: MAX_PATTERNED_LENGTH, length: 1 };
  if (rest[0] === '?') return { times: 1, length: 1 };
  const m = /^\{(\d+)(,(\d*))?\}/.exec(rest);
  if (!m) return { times: 0, length: 0 };
  const upper = m[2] === undefined ? Number(m[1]) : m[3] === '' ? MAX_PATTERNED_LENGTH : Number(m[3]);
  return { times: Math.min(upper, MAX_PATTERNED_LENGTH), length: m[0].length };
}

/** The most backtracking steps a pattern may cost on a MAX_PATTERNED_LENGTH value, by the product of its quantifiers' ranges. */
const MAX_PATTERN_COST = 1e7;

/**
 * What safe-regex2's star height misses: an alternation repeated many times (`(a|aa)*`), and quantifiers
 * whose ranges multiply into polynomial backtracking (`\d*\d*\d*\d*x`, `a{0,20}` six times). Each
 * quantifier's range counts (unbounded as MAX_PATTERNED_LENGTH, the most a pattern runs on); their
 * product must stay within MAX_PATTERN_COST.
 */
function backtrackingProblem(pattern: string): string | null {
  let cost = 1;
  const groups: { alternation: boolean }[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      i++;
    } else if (ch === '[') {
      // A character class: skip to its end (escapes included); nothing inside it quantifies.
      for (i++; i < pattern.length && pattern[i] !== ']'; i++) if (pattern[i] === '\\') i++;
    } else if (ch === '(') {
      groups.push({ alternation: false });
      continue;
    } else if (ch === '|') {
      if (groups.length) groups[groups.length - 1].alternation = true;
      continue;
    } else if (ch === ')') {
      if (groups.pop()?.alternation && repeats(pattern.slice(i + 1)).times > 20) return 'repeats an alternation, which may take exponential time; use a character class such as [ab]+';
    } else if (repeats(pattern.slice(i)).length) continue; // a quantifier right after a quantifier (lazy ?, or a mistake the compile caught)
    // The atom just passed may be quantified.
    const q = repeats(pattern.slice(i + 1));
    if (q.length) {
      cost *= q.times + 1;
      if (cost > MAX_PATTERN_COST) return 'has too many repetitions that could backtrack against each other (*, +, {n,m}); simplify it';
      i += q.length;
      if (pattern[i + 1] === '?') i++;
    }
  }
  return null;
}

export type RuleProblem = { rule: 'pattern' | 'minLength' | 'maxLength' | 'min' | 'max' | 'number'; message: string };

/**
 * What is wrong with a non-empty value of a TEXT or NUMBER field under its validation, or null. The
 * value is bounded (MAX_TEXT_LENGTH, MAX_NUMBER_LENGTH) before any pattern runs on it.
 */
export function ruleProblem(type: FieldType | string, v: FieldValidation | undefined, value: string): RuleProblem | null {
  if (type === 'NUMBER') {
    if (value.length > MAX_NUMBER_LENGTH || !NUMBER_PATTERN.test(value)) return { rule: 'number', message: 'must be a number' };
    const n = Number(value);
    if (v?.min !== undefined && n < v.min) return { rule: 'min', message: `must be at least ${v.min}` };
    if (v?.max !== undefined && n > v.max) return { rule: 'max', message: `must be at most ${v.max}` };
    return null;
  }
  if (value.length > MAX_TEXT_LENGTH) return { rule: 'maxLength', message: `at most ${MAX_TEXT_LENGTH} characters` };
  if (!v) return null;
  const length = [...value].length;
  if (v.minLength !== undefined && length < v.minLength) return { rule: 'minLength', message: `at least ${v.minLength} characters` };
  if (v.maxLength !== undefined && length > v.maxLength) return { rule: 'maxLength', message: `at most ${v.maxLength} characters` };
  if (v.pattern !== undefined && length > MAX_PATTERNED_LENGTH) return { rule: 'maxLength', message: `at most ${MAX_PATTERNED_LENGTH} characters` };
  if (v.pattern !== undefined && !compilePattern(v.pattern).test(value)) return { rule: 'pattern', message: 'does not have the expected format' };
  return null;
}

/** A condition's `equals` as stored: "true"/"false" for a CHECKBOX ("checked" is true), the option otherwise; null when invalid. */
export function normalizeEquals(target: { type: string; options: string[] | null }, equals: string | boolean): string | null {
  if (target.type === 'CHECKBOX') {
    if (equals === true || equals === 'true' || equals === 'checked') return 'true';
    if (equals === false || equals === 'false' || equals === 'unchecked') return 'false';
    return null;
  }
  return typeof equals === 'string' && (target.options ?? []).includes(equals) ? equals : null;
}

/** Whether a controlling field's value meets a condition: an unticked or empty CHECKBOX counts as "false". */
export const meets = (targetType: string, value: string | null | undefined, equals: string) => (targetType === 'CHECKBOX' ? (value === 'true' ? 'true' : 'false') === equals : value === equals);

/**
 * The fields that are visible given the values: a field with no condition is; one with a condition is
 * when its controlling field is visible and its value meets the condition (a hidden field's value counts
 * as absent, so a chain hides together). Conditions were checked acyclic and bounded at create; a
 * condition naming a field not in the list (a stale one) hides its field.
 */
export function visibleFieldIds(fields: { id: number; type: string; rules: FieldRules | null }[], valueOf: (id: number) => string | null | undefined): Set<number> {
  const byId = new Map(fields.map((f) => [f.id, f]));
  const memo = new Map<number, boolean>();
  const visible = (id: number, depth: number): boolean => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    const f = byId.get(id);
    const when = f?.rules?.visibleWhen;
    let result = Boolean(f);
    if (f && when) {
      const target = byId.get(when.fieldId);
      result = Boolean(target) && depth < MAX_CONDITION_DEPTH + 1 && visible(when.fieldId, depth + 1) && meets(target!.type, valueOf(when.fieldId), when.equals);
    }
    memo.set(id, result);
    return result;
  };
  return new Set(fields.filter((f) => visible(f.id, 0)).map((f) => f.id));
}

/** Planned rules with their batch references resolved to field ids (`ids[i]` is the id of the batch's i-th field). */
export function resolveRules(rules: PlannedRules | null | undefined, ids: number[]): FieldRules | null {
  if (!rules) return null;
  const { visibleWhen, ...rest } = rules;
  if (!visibleWhen) return rest;
  return { ...rest, visibleWhen: 'index' in visibleWhen ? { fieldId: ids[visibleWhen.index], equals: visibleWhen.equals } : visibleWhen };
}

/** Whether any of the rules asks for more than an engine that keeps no rules can do. */
export const hasRules = (rules: PlannedRules | FieldRules | null | undefined) => Boolean(rules && Object.keys(rules).some((k) => k !== 'ref'));
