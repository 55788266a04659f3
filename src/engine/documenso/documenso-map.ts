/**
 * Pure translations between Signet's engine types and Documenso's v2 shapes: the create payload (roles,
 * signing order, fields in percent of the page) and the status mapping. Documenso's envelope knows only
 * DRAFT/PENDING/COMPLETED/REJECTED/CANCELLED: SENT and PARTIALLY_SIGNED are read from its recipients,
 * and the states Signet decides itself (a create-and-send not yet distributed, an expiry, a cancel of
 * what Documenso cannot cancel) ride in the envelope's externalId (MARK), which Signet alone writes.
 */
import type * as ops from '@documenso/sdk-typescript/models/operations/index.js';
import { AppError } from '../../errors.js';
import type { CreateDocumentInput, EngineFieldInput, EngineRecipientStatus, EngineStatus, EnvelopeStatus } from '../engine.js';

/**
 * externalId values. `send`: created to be sent at once, so Documenso's DRAFT is Signet's PENDING until
 * the distribution job runs. `expired`/`cancelled`: Signet ended it (Documenso's cancel takes only a
 * PENDING envelope, and has no EXPIRED), so its CANCELLED, DRAFT or REJECTED reads as Signet's state.
 */
export const MARK = { draft: 'signet:draft', send: 'signet:send', expired: 'signet:expired', cancelled: 'signet:cancelled' } as const;

type CreateField = NonNullable<ops.EnvelopeCreateRecipient['fields']>[number];
type Position = { page: number; positionX: number; positionY: number; width: number; height: number };

/** Both speak percent of the page as displayed, origin top-left (src/pdf/types.ts Placement): only clamped. */
export function positionOf(f: EngineFieldInput): Position {
  const pct = (v: number) => Math.min(100, Math.max(0, Math.round(v * 1000) / 1000));
  return { page: f.page, positionX: pct(f.x), positionY: pct(f.y), width: pct(f.width), height: pct(f.height) };
}

/** fieldMeta as Documenso types it: a lower-case tag, required, and the choices of a choice field. */
export function fieldMetaOf(f: EngineFieldInput): Record<string, unknown> {
  const meta: Record<string, unknown> = { type: f.type.toLowerCase(), required: f.required };
  const options = f.options ?? [];
  if (f.type === 'DROPDOWN') meta.values = options.map((value) => ({ value }));
  if (f.type === 'RADIO' || f.type === 'CHECKBOX') meta.values = options.map((value, i) => ({ id: i + 1, checked: false, value }));
  return meta;
}

/** The create request: one file, recipients with their roles, order and fields (identifier 0: the file). */
export function createRequest(input: CreateDocumentInput, file: Blob | Uint8Array): ops.EnvelopeCreateRequest {
  const gated = input.recipients.findIndex((r) => r.verificationRequired);
  // Signet's emailed-code gate is enforced by its own signing pages, which Documenso's replace.
  if (gated >= 0) throw new AppError('VALIDATION_ERROR', `payload.recipients.${gated}.verificationRequired: not available with the documenso signing engine`);
  // The language is Signet's pages' and emails', which Documenso's replace.
  const localised = input.recipients.findIndex((r) => r.locale);
  if (localised >= 0) throw new AppError('VALIDATION_ERROR', `payload.recipients.${localised}.locale: not available with the documenso signing engine`);
  const sequential = input.recipients.some((r) => r.signingOrder !== null);
  const title = input.title?.trim() || 'Document';
  const recipients: ops.EnvelopeCreateRecipient[] = input.recipients.map((r) => ({
    email: r.email,
    name: r.name,
    role: r.role,
    ...(r.signingOrder !== null ? { signingOrder: r.signingOrder } : {}),
    fields: input.fields
      .filter((f) => f.recipientEmail.toLowerCase() === r.email.toLowerCase())
      .map((f) => ({ type: f.type, identifier: 0, ...positionOf(f), fieldMeta: fieldMetaOf(f) }) as CreateField),
  }));
  const known = new Set(input.recipients.map((r) => r.email.toLowerCase()));
  const stray = input.fields.find((f) => !known.has(f.recipientEmail.toLowerCase()));
  if (stray) throw new AppError('RECIPIENT_NOT_FOUND', `No recipient ${stray.recipientEmail} on this envelope`);
  const { subject, message, redirectUrl } = input.meta;
  return {
    payload: {
      title,
      type: 'DOCUMENT',
      externalId: input.draft ? MARK.draft : MARK.send,
      recipients,
      meta: {
        signingOrder: sequential ? 'SEQUENTIAL' : 'PARALLEL',
        ...(subject ? { subject } : {}),
        ...(message ? { message } : {}),
        ...(redirectUrl ? { redirectUrl } : {}),
        // A test send must reach no real mailbox: Documenso then sends nothing (the links still work).
        ...(input.testSend ? { distributionMethod: 'NONE' as const } : {}),
      },
    },
    files: [{ fileName: `${title.replace(/[^\w.-]+/g, '_').slice(0, 80) || 'document'}.pdf`.replace(/\.pdf\.pdf$/i, '.pdf'), content: file }],
  };
}

/**
 * Documenso's fields for our fields, in our order: matched on recipient, type, page and position
 * (Documenso answers them grouped by recipient, and may round the percentages).
 */
export function matchFields(fields: EngineFieldInput[], recipientIdOf: (email: string) => number, remote: ops.EnvelopeGetField[]): number[] {
  const used = new Set<number>();
  return fields.map((f) => {
    const p = positionOf(f);
    const recipientId = recipientIdOf(f.recipientEmail);
    const candidates = remote.filter((r) => !used.has(r.id) && r.recipientId === recipientId && r.type === f.type && r.page === p.page);
    const near = (r: ops.EnvelopeGetField) => Math.abs(Number(r.positionX) - p.positionX) + Math.abs(Number(r.positionY) - p.positionY);
    const best = candidates.sort((a, b) => near(a) - near(b))[0];
    if (!best) throw new AppError('FIELD_CREATION_FAILED', `Documenso did not keep a ${f.type} field for ${f.recipientEmail} on page ${f.page}`);
    used.add(best.id);
    return best.id;
  });
}

export const numericIdOf = (e: Pick<ops.EnvelopeGetResponse, 'secondaryId'>) => e.secondaryId.replace(/^document_/, '');

const date = (v: string | null | undefined) => (v ? new Date(v) : null);

/** One recipient as the envelope service stores it; `signingUrl` from the recipient's token. */
export function recipientStatus(r: ops.EnvelopeGetRecipient, signingUrl: string): EngineRecipientStatus {
  const rejected = r.signingStatus === 'REJECTED';
  return {
    engineRecipientId: String(r.id),
    email: r.email,
    status: r.signingStatus === 'SIGNED' ? 'SIGNED' : rejected ? 'REJECTED' : 'PENDING',
    readStatus: r.readStatus === 'OPENED' ? 'OPENED' : 'NOT_OPENED',
    sendStatus: r.sendStatus === 'SENT' ? 'SENT' : 'NOT_SENT',
    // Documenso keeps no time of the first view.
    viewedAt: null,
    signedAt: rejected ? null : date(r.signedAt),
    // A rejection is stamped in signedAt (Documenso's rejectDocumentWithToken).
    rejectedAt: rejected ? date(r.signedAt) : null,
    rejectionReason: rejected ? (r.rejectionReason ?? null) : null,
    signingUrl,
  };
}

/**
 * Signet's status of a Documenso envelope (module comment). A mark explains only a draft or an ended
 * envelope: a PENDING one is read from its recipients whatever it says, so a mark written before a
 * cancel that then failed changes nothing, and the retry marks and cancels again.
 */
export function envelopeStatus(e: Pick<ops.EnvelopeGetResponse, 'status' | 'externalId' | 'recipients' | 'documentMeta'>, now = Date.now()): EnvelopeStatus {
  const marked = e.externalId === MARK.cancelled ? 'CANCELLED' : e.externalId === MARK.expired ? 'EXPIRED' : undefined;
  switch (e.status) {
    case 'COMPLETED':
      return 'COMPLETED';
    case 'DRAFT':
      return marked ?? (e.externalId === MARK.send ? 'PENDING' : 'DRAFT');
    case 'REJECTED':
      return marked ?? 'REJECTED';
    case 'CANCELLED':
      return marked ?? 'CANCELLED';
    case 'PENDING':
      // Documenso expires recipients, never the envelope: once everyone whose turn it is has expired,
      // nobody left can act, and the envelope has ended as Signet's own expiry ends one.
      if (nobodyCanAct(e, now)) return 'EXPIRED';
      // As the local engine: PARTIALLY_SIGNED once a SIGNER signed, SENT once invitations are out.
      if (e.recipients.some((r) => r.role === 'SIGNER' && r.signingStatus === 'SIGNED')) return 'PARTIALLY_SIGNED';
      return e.recipients.some((r) => r.sendStatus === 'SENT') ? 'SENT' : 'PENDING';
  }
}

/** A recipient whose signing window passed (RECIPIENT_EXPIRED): Documenso no longer lets them act. */
const expired = (r: ops.EnvelopeGetRecipient, now: number) => r.expired !== null || (r.expiresAt !== null && Date.parse(r.expiresAt) <= now);

function nobodyCanAct(e: Pick<ops.EnvelopeGetResponse, 'recipients' | 'documentMeta'>, now: number): boolean {
  const turn = currentTurn(e);
  return turn.length > 0 && turn.every((r) => expired(r, now));
}

export function engineStatus(e: ops.EnvelopeGetResponse, signingUrl: (token: string) => string): EngineStatus {
  const status = envelopeStatus(e);
  return { status, completedAt: status === 'COMPLETED' ? date(e.completedAt) : null, recipients: e.recipients.map((r) => recipientStatus(r, signingUrl(r.token))) };
}

/**
 * Who may act now, for a reminder: every recipient still to act (not CC) in a parallel envelope; in a
 * sequential one, those of the lowest signing order still waiting.
 */
export function currentTurn(e: Pick<ops.EnvelopeGetResponse, 'recipients' | 'documentMeta'>): ops.EnvelopeGetRecipient[] {
  const waiting = e.recipients.filter((r) => r.role !== 'CC' && r.signingStatus === 'NOT_SIGNED');
  if (e.documentMeta.signingOrder !== 'SEQUENTIAL' || waiting.length === 0) return waiting;
  const first = Math.min(...waiting.map((r) => r.signingOrder ?? Infinity));
  return waiting.filter((r) => (r.signingOrder ?? Infinity) === first);
}
