import type { EngineFieldInput, SigningEngine } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import { markerFieldPlacements } from '../../pdf/marker-fields.js';
import type { PreparedDocument } from '../../pdf/types.js';
import type { TCreatePayload, TFieldInput } from './envelopes.schemas.js';
import { planFieldRules } from './field-rules.js';

export const MAX_SIGNERS = 10;
/** Roles that may carry verificationRequired: those who sign or approve. */
export const VERIFIABLE_ROLES: ReadonlySet<string> = new Set(['SIGNER', 'APPROVER']);

export const invalid = (path: string, message: string) => new AppError('VALIDATION_ERROR', `${path}: ${message}`, { details: [{ path, message }] });

export function fieldToEngine(f: TFieldInput, recipientEmail: string): EngineFieldInput {
  return {
    recipientEmail,
    type: f.type,
    page: f.page,
    x: f.positionXPercent ?? f.positionX!,
    y: f.positionYPercent ?? f.positionY!,
    width: f.widthPercent ?? f.width!,
    height: f.heightPercent ?? f.height!,
    required: f.required ?? !['CHECKBOX'].includes(f.type),
    options: f.options ?? null,
    hide: null,
  };
}

/** A stored placement as callers see it: SPEC's *Percent names and the Alt ones, both. */
export const placementDto = (p: { page: number; x: number; y: number; width: number; height: number }) => ({
  page: p.page,
  positionX: p.x,
  positionXPercent: p.x,
  positionY: p.y,
  positionYPercent: p.y,
  width: p.width,
  widthPercent: p.width,
  height: p.height,
  heightPercent: p.height,
});

/** The recipient rules, which need no document: unique emails, one to MAX_SIGNERS signers. Returns email → index. */
export function checkRecipients(payload: TCreatePayload): Map<string, number> {
  const emails = new Map<string, number>();
  payload.recipients.forEach((r, i) => {
    const key = r.email.toLowerCase();
    if (emails.has(key)) throw invalid(`payload.recipients.${i}.email`, `duplicate recipient ${r.email}`);
    // Only someone who acts is asked for a code: a VIEWER or CC is never shown a signing step to gate.
    if (r.verificationRequired && !VERIFIABLE_ROLES.has(r.role)) throw invalid(`payload.recipients.${i}.verificationRequired`, `only a SIGNER or APPROVER can be required to verify; this recipient is a ${r.role}`);
    emails.set(key, i);
  });
  const signers = payload.recipients.filter((r) => r.role === 'SIGNER').length;
  if (signers === 0) throw invalid('payload.recipients', 'at least one recipient must be a SIGNER');
  if (signers > MAX_SIGNERS) throw new AppError('OUT_OF_SCOPE_V1', `At most ${MAX_SIGNERS} signers per envelope in v1`);
  return emails;
}

/**
 * Every SIGNER must sign: an envelope is sent only when each SIGNER has at least one SIGNATURE field
 * (placed by coordinates or by a marker). Without one a signer would finish with an empty body and
 * still count as SIGNED. A draft may lack them until it is sent. `pathOf` names the signer in details.
 */
export function requireSignatureFields(recipients: { email: string; role: string }[], fields: { recipientEmail: string; type: string }[], pathOf: (index: number) => string): void {
  const signing = new Set(fields.filter((f) => f.type === 'SIGNATURE').map((f) => f.recipientEmail.toLowerCase()));
  recipients.forEach((r, i) => {
    if (r.role === 'SIGNER' && !signing.has(r.email.toLowerCase())) throw invalid(pathOf(i), `SIGNER ${r.email} has no SIGNATURE field; every SIGNER needs one before the envelope is sent`);
  });
}

/** Checks the payload against itself and the document, and settles which fields go where; `filePart` names the upload in details. */
export function planFields(payload: TCreatePayload, emails: Map<string, number>, doc: PreparedDocument, filePart = 'pdf'): { fields: EngineFieldInput[]; fromMarkers: boolean } {

  const explicit: { f: TFieldInput; email: string; path: string }[] = [];
  (payload.fields ?? []).forEach((f, i) => explicit.push({ f, email: f.recipientEmail!, path: `payload.fields.${i}` }));
  payload.recipients.forEach((r, i) =>
    (r.fields ?? []).forEach((f, j) => explicit.push({ f, email: f.recipientEmail ?? r.email, path: `payload.recipients.${i}.fields.${j}` })),
  );

  if (explicit.length > 0) {
    const fields = explicit.map(({ f, email, path }) => {
      if (!emails.has(email.toLowerCase())) throw new AppError('RECIPIENT_NOT_FOUND', `${path}.recipientEmail: ${email} is not a recipient of this envelope`);
      if (f.page > doc.info.pageCount) throw invalid(`${path}.page`, `the document has ${doc.info.pageCount} page(s)`);
      return fieldToEngine(f, payload.recipients[emails.get(email.toLowerCase())!].email);
    });
    // Conditions name fields by ref across the whole payload (top-level and nested fields alike).
    const rules = planFieldRules(explicit);
    return { fromMarkers: false, fields: fields.map((f, i) => ({ ...f, rules: rules[i] })) };
  }

  // No fields given: place them from `{{type, rN}}` markers in the PDF text.
  if (doc.badMarkers.length) {
    const b = doc.badMarkers[0];
    throw invalid(filePart, `marker "${b.text}" on page ${b.page}: ${b.reason}`);
  }
  // The marker gives the position, its type the size; the marker's own box is what sealing hides.
  const placed = markerFieldPlacements(doc.markers, doc.info.pages);
  return {
    fromMarkers: doc.markers.length > 0,
    fields: doc.markers.map((m, i) => {
      const r = payload.recipients[m.recipientIndex - 1];
      if (!r) throw invalid(filePart, `marker "${m.text}" on page ${m.page} names r${m.recipientIndex}, but there are ${payload.recipients.length} recipient(s)`);
      const { x, y, width, height } = placed[i];
      return { recipientEmail: r.email, type: m.type, page: m.page, x, y, width, height, required: m.type !== 'CHECKBOX', options: null, hide: m };
    }),
  };
}

/** allowDelegation at create: refused up front where the engine cannot hand a place over (Documenso). */
export function requireDelegable(engine: Pick<SigningEngine, 'replaceRecipient'>, allow: boolean | undefined): boolean {
  if (allow && !engine.replaceRecipient) throw new AppError('NOT_SUPPORTED_BY_ENGINE', 'allowDelegation: the documenso signing engine keeps its recipients itself, so recipients cannot delegate; leave allowDelegation unset');
  return allow === true;
}
