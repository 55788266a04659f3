import { randomUUID } from 'node:crypto';
import type { DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { t } from '../../i18n/catalogue.js';
import { resolveLocale } from '../../i18n/locales.js';
import { imageProblem } from '../../pdf/image-header.js';
import { CONDITION_TYPES, MAX_NUMBER_LENGTH, MAX_TEXT_LENGTH, NUMBER_PATTERN, ruleProblem, visibleFieldIds } from '../field-rules.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import { documentKey, type LocalEngine } from './local-engine.js';
import type { AttachmentRow, DocumentRow, FieldRow, LocalEngineRepo, RecipientRow } from './local-engine.repo.js';
import type { Notifier } from './notifications.js';
import { TOKEN_PATTERN, type TokenDeriver } from './tokens.js';
import { ACTING_ROLES, allSignersSigned, currentTurn } from './turns.js';

export type ClientInfo = { ip: string; userAgent: string | null; /** The page's language (its requests' Accept-Language), for the built-in consent text. */ locale?: string | null };
export type CompleteInput = {
  fields: { fieldId: number; value?: string | null }[];
  signature?: { kind: 'typed' | 'drawn' | 'uploaded'; text?: string; image?: string };
};

const MAX_IMAGE_BYTES = 1024 * 1024;
const AUTO_FILLED = new Set(['NAME', 'EMAIL', 'DATE']);

const invalid = (path: string, message: string) => new AppError('VALIDATION_ERROR', `${path}: ${message}`, { details: [{ path, message }] });

function decodeImage(dataUrl: string, path: string): { bytes: Buffer; ext: 'png' | 'jpg' } {
  const m = /^data:image\/(png|jpeg);base64,([A-Za-z0-9+/=]+)$/.exec(dataUrl);
  if (!m) throw invalid(path, 'must be a data URL of a PNG or JPEG image');
  const bytes = Buffer.from(m[2], 'base64');
  if (bytes.length === 0 || bytes.length > MAX_IMAGE_BYTES) throw invalid(path, `must be 1 byte to ${MAX_IMAGE_BYTES} bytes`);
  // Bounded by its declared dimensions, read from the header: nothing decodes it here (the workers do).
  const problem = imageProblem(bytes);
  if (problem) throw invalid(path, problem);
  return { bytes, ext: bytes[0] === 0x89 ? 'png' : 'jpg' };
}

const initialsOf = (name: string) =>
  name
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase())
    .join('')
    .slice(0, 4);

/**
 * Why nobody can act on the document any more, or null while it is active. The signing window counts
 * from expiresAt itself, not from the sweep that later records EXPIRED.
 */
export function endedReason(doc: DocumentRow, now = Date.now()): 'completed' | 'cancelled' | 'expired' | 'rejected' | null {
  if (doc.status === 'COMPLETED' || doc.status === 'SEALING') return 'completed';
  if (doc.status === 'CANCELLED') return 'cancelled';
  if (doc.status === 'EXPIRED') return 'expired';
  if (doc.status === 'REJECTED') return 'rejected';
  if (doc.status !== 'DRAFT' && doc.expiresAt.getTime() <= now) return 'expired';
  return null;
}

/**
 * Why a recipient cannot act now, or null when they can. PENDING (created and sent, distribution job
 * still queued) is active: the links in the create response work from the moment it is answered.
 */
export function blockedReason(doc: DocumentRow, me: RecipientRow, recipients: RecipientRow[]): string | null {
  const ended = endedReason(doc);
  if (ended) return ended;
  if (doc.status === 'DRAFT') return 'waiting';
  if (!ACTING_ROLES.has(me.role)) return 'view_only';
  if (me.status === 'SIGNED') return 'signed';
  if (me.status === 'REJECTED') return 'rejected';
  if (awaitsVerification(doc, me)) return 'verification_required';
  return currentTurn(recipients).some((r) => r.id === me.id) ? null : 'waiting';
}

/**
 * A gated recipient who has not confirmed their emailed code yet, on an envelope still active: they
 * are shown no document and no field, and can neither sign nor decline. After an end there is nothing
 * left to unlock (a completed envelope's sealed copy is mailed to every recipient anyway).
 */
export function awaitsVerification(doc: DocumentRow, me: RecipientRow): boolean {
  return me.verificationRequired && me.verifiedAt === null && endedReason(doc) === null;
}

/** What the recipient's own page needs, and the recipient-side actions, for the /sign routes. */
export function createRecipientActions(deps: { repo: LocalEngineRepo; storage: BlobStorage; tokens: TokenDeriver; notifier: Notifier; local: LocalEngine }) {
  const { repo, storage, notifier } = deps;

  return {
    /** Resolves a link token to its recipient; undefined when it is malformed or unknown. */
    async recipientOf(tx: DbOrTx, token: string): Promise<RecipientRow | undefined> {
      if (!TOKEN_PATTERN.test(token)) return undefined;
      return repo.recipientByTokenHash(tx, deps.tokens.hash(token));
    },

    /** Whether an unknown token is a delegator's old link (its recipient handed the document on). */
    async handedOver(tx: DbOrTx, token: string): Promise<boolean> {
      if (!TOKEN_PATTERN.test(token)) return false;
      return (await deps.local.handovers.byOldTokenHash(tx, deps.tokens.hash(token))) !== undefined;
    },

    async load(tx: DbOrTx, recipient: RecipientRow, lock: boolean) {
      const doc = (await repo.document(tx, recipient.documentId, lock))!;
      const recipients = await repo.recipients(tx, doc.id);
      const me = recipients.find((r) => r.id === recipient.id)!;
      const fields = (await repo.fields(tx, doc.id)).filter((f) => f.recipientId === me.id);
      // Only for a recipient with FILE fields: every other action reads nothing more.
      const attachments = fields.some((f) => f.type === 'FILE') ? await repo.attachments(tx, doc.id) : [];
      return { doc, me, recipients, fields, attachments };
    },

    /**
     * The first open records the view (once per recipient), with the client's IP and user agent; an
     * open after the envelope ended records nothing (a terminal state is final).
     */
    async recordView(tx: Tx, doc: DocumentRow, me: RecipientRow, client: ClientInfo): Promise<boolean> {
      if (me.readStatus === 'OPENED' || doc.status === 'DRAFT' || endedReason(doc)) return false;
      await repo.updateRecipient(tx, me.id, { readStatus: 'OPENED', viewedAt: new Date(), ip: client.ip, userAgent: client.userAgent });
      await repo.insertEvent(tx, { documentId: doc.id, recipientId: me.id, event: 'VIEWED', ip: client.ip, userAgent: client.userAgent });
      return true;
    },

    /**
     * A recipient who may act on a PENDING document (its distribution job still queued) distributes it
     * first: SENT, then the action, whose invitations skip whoever already acted. The job then finds
     * nothing to do. Answers whether it did.
     */
    async distributeOnAction(tx: Tx, ctx: { doc: DocumentRow; me: RecipientRow; recipients: RecipientRow[] }): Promise<boolean> {
      if (ctx.doc.status !== 'PENDING' || blockedReason(ctx.doc, ctx.me, ctx.recipients) !== null) return false;
      await deps.local.markSent(tx, ctx.doc.id);
      return true;
    },

    prefill,

    /**
     * The signature image, checked on its header and stored before the signing transaction opens (no
     * file write holds a lock), under a key of its own. Stored last: the request is first checked as
     * the transaction will check it (the recipient may act, every field id is theirs, required values
     * and the signature are there), so a request refused for what it carries stores nothing. Undefined
     * when the request carries no image or names no recipient (the transaction answers).
     */
    async storeSignatureImage(db: DbOrTx, token: string, input: CompleteInput): Promise<string | undefined> {
      if (!input.signature?.image) return undefined;
      const img = decodeImage(input.signature.image, 'body.signature.image');
      const recipient = await this.recipientOf(db, token);
      if (!recipient) return undefined;
      const ctx = await this.load(db, recipient, false);
      if (ctx.doc.status === 'DRAFT') return undefined;
      planCompletion(ctx, input, 'not-stored-yet');
      const imageKey = documentKey(ctx.doc.id, `signatures/${ctx.me.id}-${randomUUID()}.${img.ext}`);
      await storage.put(imageKey, img.bytes);
      return imageKey;
    },

    /**
     * Removes the image of a request its transaction refused (rolled back: no row points to it), so
     * refusals do not pile images up for the blob sweep's hour. A failed removal is left to the sweep.
     */
    async discardSignatureImage(imageKey: string): Promise<void> {
      await storage.delete(imageKey).catch(() => undefined);
    },

    /** The gated recipient confirmed their emailed code: recorded on the recipient and in the audit trail. */
    async markVerified(tx: Tx, ctx: { doc: DocumentRow; me: RecipientRow }, verifiedAt: Date, client: ClientInfo): Promise<void> {
      await repo.updateRecipient(tx, ctx.me.id, { verifiedAt });
      await repo.insertEvent(tx, { documentId: ctx.doc.id, recipientId: ctx.me.id, event: 'RECIPIENT_VERIFIED', ip: client.ip, userAgent: client.userAgent, at: verifiedAt });
    },

    /**
     * The recipient agrees to use electronic records and signatures: recorded on the recipient (when,
     * from where, the hash of the text shown, their time zone) with a CONSENTED event, once. A second
     * call answers the first consent's time and records nothing. Answers whether it recorded.
     */
    async consent(tx: Tx, ctx: { doc: DocumentRow; me: RecipientRow; recipients: RecipientRow[] }, consent: { textSha256: string; timeZone: string | null }, client: ClientInfo): Promise<Date> {
      const { doc, me, recipients } = ctx;
      if (me.consentedAt) return me.consentedAt;
      // Declining needs no consent and no turn: consenting is allowed whenever declining is.
      assertCanAct(doc, me, recipients, true);
      const at = new Date();
      await repo.updateRecipient(tx, me.id, { consentedAt: at, consentIp: client.ip, consentUserAgent: client.userAgent, consentTextSha256: consent.textSha256, timeZone: consent.timeZone });
      await repo.insertEvent(tx, { documentId: doc.id, recipientId: me.id, event: 'CONSENTED', ip: client.ip, userAgent: client.userAgent, at });
      return at;
    },

    /** A SIGNER signs (or an APPROVER approves): values checked, stored, and the next turn invited. */
    async complete(tx: Tx, ctx: CompletionContext, input: CompleteInput, client: ClientInfo, imageKey?: string): Promise<'SIGNED' | 'APPROVED'> {
      const { doc, me, recipients } = ctx;
      const { values, signature } = planCompletion(ctx, input, imageKey);
      for (const [fieldId, value] of values) await repo.setFieldValue(tx, fieldId, value);

      const now = new Date();
      await repo.updateRecipient(tx, me.id, {
        status: 'SIGNED',
        signedAt: now,
        ip: client.ip,
        userAgent: client.userAgent,
        signature,
        ...(me.readStatus === 'OPENED' ? {} : { readStatus: 'OPENED', viewedAt: now }),
      });
      await repo.insertEvent(tx, { documentId: doc.id, recipientId: me.id, event: me.role === 'APPROVER' ? 'APPROVED' : 'SIGNED', ip: client.ip, userAgent: client.userAgent });

      const after = recipients.map((r) => (r.id === me.id ? { ...r, status: 'SIGNED' } : r));
      if (allSignersSigned(after)) await deps.local.requestSeal(tx, doc.id);
      else if (me.role === 'SIGNER' && doc.status === 'SENT') await repo.updateDocument(tx, doc.id, { status: 'PARTIALLY_SIGNED' });
      // VIEWERs too: they are not invited yet when this action distributed the document.
      await deps.local.notifyTurn(tx, doc, after, true);
      return me.role === 'APPROVER' ? 'APPROVED' : 'SIGNED';
    },

    /** A SIGNER (or APPROVER) declines: the document ends REJECTED and the others are told. */
    async reject(tx: Tx, ctx: { doc: DocumentRow; me: RecipientRow; recipients: RecipientRow[] }, reason: string, client: ClientInfo): Promise<void> {
      const { doc, me, recipients } = ctx;
      assertCanAct(doc, me, recipients, true);
      const now = new Date();
      await repo.updateRecipient(tx, me.id, { status: 'REJECTED', rejectedAt: now, rejectionReason: reason, ip: client.ip, userAgent: client.userAgent });
      await repo.updateDocument(tx, doc.id, { status: 'REJECTED' });
      await repo.insertEvent(tx, { documentId: doc.id, recipientId: me.id, event: 'REJECTED', ip: client.ip, userAgent: client.userAgent });
      for (const r of recipients) if (r.id !== me.id && r.notifiedAt) await notifier.rejected(tx, doc, r, me, reason);
    },
  };
}

export type RecipientActions = ReturnType<typeof createRecipientActions>;

export const consentRequired = () =>
  new AppError('CONSENT_REQUIRED', 'Agree to use electronic records and signatures first (POST consent); declining needs no consent');

export const verificationRequired = () =>
  new AppError('RECIPIENT_VERIFICATION_REQUIRED', 'Confirm your email address first: request a code (POST verification/code) and enter it (POST verification/confirm)');

/** Declining is allowed out of turn (a later signer may refuse early); signing is not. */
export function assertCanAct(doc: DocumentRow, me: RecipientRow, recipients: RecipientRow[], outOfTurnOk = false): void {
  // Before the envelope's state: a retry whose first attempt took effect (its answer lost with a node)
  // is told so even when that action ended the envelope (the last signature, a decline).
  if (me.status === 'SIGNED' || me.status === 'REJECTED') throw new AppError('ALREADY_ACTED', 'You have already acted on this envelope');
  const reason = blockedReason(doc, me, recipients);
  if (reason === null || (outOfTurnOk && reason === 'waiting' && doc.status !== 'DRAFT')) return;
  if (reason === 'waiting') throw new AppError('NOT_YOUR_TURN', 'Another recipient must act first');
  if (reason === 'view_only') throw new AppError('FORBIDDEN', 'Your role on this envelope is view-only');
  if (reason === 'verification_required') throw verificationRequired();
  throw new AppError('ENVELOPE_NOT_ACTIVE', `The envelope is ${reason}`);
}

function prefill(me: RecipientRow, f: FieldRow): string | null {
  if (f.type === 'NAME') return me.name;
  if (f.type === 'EMAIL') return me.email;
  if (f.type === 'DATE') return new Date().toISOString().slice(0, 10);
  return f.value ?? f.rules?.value ?? null;
}

/** A read-only field keeps the sender's value: the same value sent back is accepted, any other refused. */
function readOnlyValue(f: FieldRow, raw: string | null | undefined, path: string): string {
  const sent = raw === undefined || raw === null ? '' : String(raw).trim();
  if (sent !== '' && sent !== f.rules!.value) throw new AppError('FIELD_READ_ONLY', `${path}: this field's value is set by the sender and cannot be changed`, { details: [{ path, message: 'read-only' }] });
  return f.rules!.value!;
}

/**
 * What a completion writes, every value checked: each of the recipient's fields' value and the
 * signature. Throws the refusal the request earns: run before the image is stored (nothing is
 * written for a request that will be refused) and again in the transaction, under the lock.
 */
type CompletionContext = { doc: DocumentRow; me: RecipientRow; recipients: RecipientRow[]; fields: FieldRow[]; attachments?: AttachmentRow[] };

function planCompletion(ctx: CompletionContext, input: CompleteInput, imageKey?: string): { values: [number, string | null][]; signature: RecipientRow['signature'] } {
  const { doc, me, recipients, fields } = ctx;
  assertCanAct(doc, me, recipients);
  // Every action but declining (signing, approving, filling fields) comes after the recipient's consent (ESIGN 7001(c)).
  if (!me.consentedAt) throw consentRequired();
  const given = new Map<number, string | null | undefined>();
  input.fields.forEach((f, i) => {
    if (!fields.some((x) => x.id === f.fieldId)) throw invalid(`body.fields.${i}.fieldId`, `field ${f.fieldId} is not one of yours`);
    given.set(f.fieldId, f.value);
  });

  const needsSignature = fields.some((f) => f.type === 'SIGNATURE' || f.type === 'INITIALS');
  let signature: RecipientRow['signature'] = null;
  if (input.signature) {
    const s = input.signature;
    if (s.kind === 'typed') {
      if (!s.text?.trim()) throw invalid('body.signature.text', 'a typed signature needs text');
      // The page also sends the typed name as drawn in its script font (stored as `imageKey`);
      // stamping that image makes the sealed PDF look like the preview the signer approved.
      signature = { kind: 'typed', text: s.text.trim().slice(0, 200), imageKey };
    } else {
      if (!s.image || !imageKey) throw invalid('body.signature.image', `a ${s.kind} signature needs an image`);
      signature = { kind: s.kind, imageKey };
    }
  } else if (needsSignature && me.role === 'SIGNER') {
    throw invalid('body.signature', 'a signature is required');
  }

  // The controlling fields' values first: from them the server decides which fields are shown, as the page does.
  const controls = new Map<number, string | null>();
  for (const f of fields) if (CONDITION_TYPES.has(f.type)) controls.set(f.id, validateValue(f, given.get(f.id), `body.fields[fieldId=${f.id}]`));
  const visible = visibleFieldIds(fields, (id) => controls.get(id));

  const values: [number, string | null][] = [];
  for (const f of fields) {
    const path = `body.fields[fieldId=${f.id}]`;
    if (!visible.has(f.id)) {
      // Hidden: not required, not stamped; a value sent for it is refused (the page sends none).
      const sent = given.get(f.id);
      if (sent !== undefined && sent !== null && String(sent).trim() !== '' && sent !== 'false') throw new AppError('FIELD_HIDDEN', `${path}: this field is hidden by its condition; send no value for it`, { details: [{ path, message: 'hidden' }] });
      values.push([f.id, null]);
      continue;
    }
    let value: string | null;
    if (AUTO_FILLED.has(f.type)) value = prefill(me, f);
    else if (f.type === 'SIGNATURE') value = signature?.imageKey ? `image:${signature.imageKey}` : (signature?.text ?? null);
    else if (f.type === 'INITIALS') {
      const typed = given.get(f.id)?.trim();
      value = signature?.kind !== 'typed' && signature?.imageKey ? `image:${signature.imageKey}` : typed || initialsOf(signature?.text ?? me.name);
    } else if (f.type === 'FILE') {
      // Its value is the attachment uploaded before (POST attachments/{fieldId}), never what the request says.
      // Stamped as a note in the field's box, in the signer's language ("Attached: name.pdf"): the file itself is not.
      const name = ctx.attachments?.find((a) => a.fieldId === f.id)?.name;
      value = name ? t(resolveLocale(me.locale), 'signing-attachments.stamp', { name }) : null;
    } else if (f.rules?.readOnly) value = readOnlyValue(f, given.get(f.id), path);
    else value = controls.has(f.id) ? controls.get(f.id)! : validateValue(f, given.get(f.id), path);
    if (f.required && (value === null || value === '' || (f.type === 'CHECKBOX' && value !== 'true'))) throw invalid(path, f.type === 'FILE' ? 'FILE is required: attach a file first (POST attachments/{fieldId})' : `${f.type} is required`);
    values.push([f.id, value]);
  }
  return { values, signature };
}

function validateValue(f: FieldRow, raw: string | null | undefined, path: string): string | null {
  const value = raw === undefined || raw === null ? null : String(raw).trim();
  if (value === null || value === '') return null;
  switch (f.type) {
    case 'TEXT':
    case 'NUMBER': {
      // Bounded before any pattern runs; then the field's own rules (pattern, lengths, min and max).
      if (value.length > (f.type === 'TEXT' ? MAX_TEXT_LENGTH : MAX_NUMBER_LENGTH)) throw invalid(path, `at most ${f.type === 'TEXT' ? MAX_TEXT_LENGTH : MAX_NUMBER_LENGTH} characters`);
      if (f.type === 'NUMBER' && !NUMBER_PATTERN.test(value)) throw invalid(path, 'must be a number');
      const problem = ruleProblem(f.type, f.rules?.validation, value);
      if (problem) throw new AppError('FIELD_VALUE_INVALID', `${path}: ${problem.message}`, { details: [{ path, rule: problem.rule, message: problem.message }] });
      return value;
    }
    case 'CHECKBOX':
      if (value !== 'true' && value !== 'false') throw invalid(path, 'must be "true" or "false"');
      return value;
    case 'RADIO':
    case 'DROPDOWN':
      if (f.options?.length && !f.options.includes(value)) throw invalid(path, `must be one of ${f.options.join(', ')}`);
      return value;
    default:
      return value;
  }
}
