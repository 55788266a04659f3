import { z } from 'zod';
import { AppError } from '../../../errors.js';
import { formatUsd } from '../../../lib/money.js';
import { PRICES, type BillableOperation } from '../../../lib/prices.js';
import { invalid } from '../../envelopes/envelope-plan.js';
import { ZAddFields, ZAddFieldsResult, ZCreatePayload, ZDraftCreated, ZEnvelope, ZListQuery, ZLiveStatus, ZMeta, ZResendResult, ZSendResult, ZSuccess, type TCreatePayload, type TEnvelope } from '../../envelopes/envelopes.schemas.js';
import type { EnvelopesService } from '../../envelopes/envelopes.service.js';
import { defineTool, type ToolContext, type ToolDefinition } from '../tool.js';
import { ZIdempotencyKey, countText, pageOf, pageOutput, pagingInput, toPaging } from './tool-shapes.js';

export type EnvelopeToolDeps = {
  envelopes: Pick<EnvelopesService, 'plan' | 'create' | 'commitPlanned' | 'get' | 'list' | 'liveStatus' | 'send' | 'resend' | 'remove' | 'download' | 'addFields' | 'removeField'>;
  maxPdfBytes: number;
  publicUrl: string;
  /** MCP_INLINE_MAX_BYTES: the PDF bytes one POST /mcp answer inlines, its batch included (the endpoint keeps the count). */
  inlineMaxBytes: number;
};

const usd = (op: BillableOperation) => `USD ${formatUsd(PRICES[op].micros)}`;
const ZEnvelopeIdArg = z.string().min(1).max(100).describe('The envelope id (a UUID) from create_envelope or list_envelopes');
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * The PDF of a create, bounded before it is decoded: its size follows from the base64 length, so an
 * oversize document is refused without allocating it.
 */
export function decodePdfBase64(text: string, maxBytes: number): Uint8Array {
  const b64 = text.replace(/^data:[^,]{0,100};base64,/, '').replace(/\s+/g, '');
  if (b64.length === 0) throw new AppError('MISSING_PDF', 'pdfBase64 is empty');
  const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  const bytes = Math.floor((b64.length * 3) / 4) - padding;
  if (bytes > maxBytes) throw new AppError('PDF_TOO_LARGE', `The PDF exceeds the ${maxBytes}-byte limit`, { maxBytes });
  if (!BASE64.test(b64) || b64.length % 4 === 1) throw invalid('pdfBase64', 'is not base64');
  return new Uint8Array(Buffer.from(b64, 'base64'));
}

const createInput = (maxPdfBytes: number) => ({
  pdfBase64: z.string().describe(`The PDF, base64-encoded (a data:application/pdf;base64, prefix is accepted); at most ${maxPdfBytes} bytes once decoded`),
  title: ZCreatePayload.shape.title,
  recipients: ZCreatePayload.shape.recipients.describe(
    'One to 50 people: {email, name, role: SIGNER | APPROVER | VIEWER | CC | ASSISTANT, signingOrder?, fields?, verificationRequired?, locale?}. At least one SIGNER, at most 10. signingOrder N+1 is invited after N has signed. verificationRequired (SIGNER or APPROVER): they confirm an emailed code before signing, USD 0.50 each, charged at the send. locale (en, de, fr, es, pt, pl, zh-CN, ar): the language of their signing page and emails; absent: the account\'s default, else their browser\'s',
  ),
  fields: ZCreatePayload.shape.fields.describe(
    'Fields by coordinates: {type: SIGNATURE | INITIALS | NAME | EMAIL | DATE | TEXT | NUMBER | CHECKBOX | RADIO | DROPDOWN, recipientEmail, page, positionXPercent, positionYPercent, widthPercent, heightPercent} (percent of the page, 0,0 top-left). Empty or absent: fields are placed from {{signature, r1}}-style markers in the PDF text (r1 is the first recipient). Rules: ref (your name for a field), visibleWhen {fieldId: a ref or fieldId of a CHECKBOX, RADIO or DROPDOWN of the same recipient, equals: true/false or an option} shows a field only for that answer (hidden fields are not required and not stamped); TEXT and NUMBER take label, placeholder, validation {pattern, minLength, maxLength, min, max}, and value with readOnly: true for a value the signer cannot change',
  ),
  meta: ZMeta.optional().describe('The invitation email: subject, message, and redirectUrl (where a signer lands after signing)'),
  storageExpiryDays: ZCreatePayload.shape.storageExpiryDays.describe('How many days the documents are kept (default 365); must outlast the signing window'),
  expiresAt: ZCreatePayload.shape.expiresAt.describe('End of the signing window, ISO 8601 (default: 30 days from now)'),
  reminders: ZCreatePayload.shape.reminders.describe(
    "Automatic reminder emails to whoever must still act: {firstAfterDays 1-60, everyDays 1-60, max 0-10}, e.g. {firstAfterDays: 3, everyDays: 2, max: 3}; null: none; absent: the account's default",
  ),
  expiryWarningDays: ZCreatePayload.shape.expiryWarningDays.describe("One warning email this many days (1-60) before expiresAt to whoever must still act; null: none; absent: the account's default"),
  allowDelegation: ZCreatePayload.shape.allowDelegation,
});

const payloadOf = (args: Pick<TCreatePayload, 'title' | 'recipients' | 'fields' | 'meta' | 'storageExpiryDays' | 'expiresAt' | 'reminders' | 'expiryWarningDays' | 'allowDelegation'>): TCreatePayload => ({
  allowDelegation: args.allowDelegation,
  title: args.title,
  recipients: args.recipients,
  fields: args.fields,
  meta: args.meta,
  storageExpiryDays: args.storageExpiryDays,
  expiresAt: args.expiresAt,
  reminders: args.reminders,
  expiryWarningDays: args.expiryWarningDays,
});

const CREATE_ERRORS =
  'MISSING_PDF, PDF_TOO_LARGE, INVALID_PDF, VALIDATION_ERROR (details names the argument: a SIGNER without a SIGNATURE field, a bad marker, duplicate emails), RECIPIENT_NOT_FOUND (a field for someone not among recipients), OUT_OF_SCOPE_V1 (over 10 signers), SERVICE_UNAVAILABLE (the PDF queue is full; retry)';

/** Envelopes as MCP tools: the same service calls, charges and audit rows as /v1/envelopes. */
export function envelopeTools(deps: EnvelopeToolDeps): ToolDefinition[] {
  const { envelopes, maxPdfBytes } = deps;

  /** Create and create_draft: the PDF decoded, planned (checks, balance, the parse) before the idempotent transaction, as the REST route. */
  async function createFrom<T>(tc: ToolContext, args: { pdfBase64: string } & Parameters<typeof payloadOf>[0], draft: boolean, shape: (dto: TEnvelope) => T) {
    const parts = [decodePdfBase64(args.pdfBase64, maxPdfBytes)];
    const plan = await envelopes.plan(tc.ctx, { payload: payloadOf(args), parts, draft });
    return envelopes.commitPlanned(tc.db, plan, () => tc.mutate(async (tx) => shape((await envelopes.create(tx, tc.ctx, plan)).dto)));
  }

  const renderEnvelope = (e: { envelopeId: string; title: string | null; status: string; recipients: { email: string; role: string; signingStatus: string; signingUrl: string }[] }) =>
    [`Envelope ${e.envelopeId} "${e.title ?? ''}" is ${e.status}.`, ...e.recipients.map((r) => `- ${r.role} ${r.email}: ${r.signingStatus}; signing link ${r.signingUrl}`)].join('\n');

  return [
    defineTool({
      name: 'create_envelope',
      title: 'Create and send an envelope',
      description: `Uploads one PDF with its recipients and sends it for signature: each SIGNER and APPROVER gets an email invitation with a personal signing link (also in the answer). Answers the envelope with status PENDING; it becomes SENT once the invitations are out. Follow it with get_envelope_status; download_envelope once COMPLETED.
Cost: ${usd('envelope_create')} per envelope (plus ${usd('verification_create')} per recipient with verificationRequired); test-mode keys are never charged. Requires idempotencyKey: a retry with the same key and arguments returns the same envelope and charges once.
Errors: ${CREATE_ERRORS}, INSUFFICIENT_BALANCE, SANDBOX_LIMIT_REACHED, X402_NOT_APPLICABLE (verificationRequired paid by x402), IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_KEY_IN_USE.`,
      input: { ...createInput(maxPdfBytes), idempotencyKey: ZIdempotencyKey },
      output: ZEnvelope.shape,
      price: 'envelope_create',
      mutates: true,
      run: (tc, args) => createFrom(tc, args, false, (dto) => dto),
      text: renderEnvelope,
    }),

    defineTool({
      name: 'create_draft',
      title: 'Create a draft envelope',
      description: `Uploads one PDF with its recipients as a DRAFT: nothing is emailed and nothing is charged. Add or remove fields (add_fields, remove_field), then send it with send_envelope (${usd('envelope_send')}). A draft may lack SIGNATURE fields until it is sent.
Free for API-key and wallet-JWT callers. idempotencyKey is optional: with one, a retry returns the same draft.
Errors: ${CREATE_ERRORS}, IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_KEY_IN_USE.`,
      input: { ...createInput(maxPdfBytes), idempotencyKey: ZIdempotencyKey.optional() },
      output: ZDraftCreated.shape,
      mutates: true,
      // As POST /v1/envelopes/draft answers it.
      run: (tc, args) =>
        createFrom(tc, args, true, ({ envelopeId, title, engineNumericId, engineEnvelopeId, recipients, fields, createdAt }) => ({ envelopeId, status: 'DRAFT' as const, title, engineNumericId, engineEnvelopeId, recipients, fields, createdAt })),
      text: (d) => `Draft ${d.envelopeId} "${d.title ?? ''}" with ${d.recipients.length} recipient(s) and ${d.fields.length} field(s); send it with send_envelope.`,
    }),

    defineTool({
      name: 'add_fields',
      title: 'Add fields to a draft',
      description: `Adds fields to a DRAFT envelope, each for one of its recipients (recipientEmail), positioned in percent of the page (0,0 top-left). Answers the new fields with their fieldId (remove_field takes it).
Free. idempotencyKey is optional: with one, a retry adds nothing more.
Errors: ENVELOPE_NOT_FOUND, ENVELOPE_NOT_DRAFT (already sent), RECIPIENT_NOT_FOUND, VALIDATION_ERROR (off the page, a page the document lacks), IDEMPOTENCY_KEY_REUSED.`,
      input: { envelopeId: ZEnvelopeIdArg, fields: ZAddFields.shape.fields, idempotencyKey: ZIdempotencyKey.optional() },
      output: ZAddFieldsResult.shape,
      mutates: true,
      run: (tc, args) => tc.mutate((tx) => envelopes.addFields(tx, tc.ctx, args.envelopeId, args.fields)),
      text: (r) => [`Added ${r.fields.length} field(s):`, ...r.fields.map((f) => `- fieldId ${f.fieldId}: ${f.type} for ${f.recipientEmail} on page ${f.page}`)].join('\n'),
    }),

    defineTool({
      name: 'remove_field',
      title: 'Remove a field from a draft',
      description: `Removes one field (by the fieldId add_fields, create_draft or get_envelope gave) from a DRAFT envelope.
Free. idempotencyKey is optional.
Errors: ENVELOPE_NOT_FOUND, INVALID_FIELD_ID (no such field on this envelope), ENVELOPE_NOT_DRAFT, IDEMPOTENCY_KEY_REUSED.`,
      input: { envelopeId: ZEnvelopeIdArg, fieldId: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe('The integer fieldId'), idempotencyKey: ZIdempotencyKey.optional() },
      output: ZSuccess.shape,
      mutates: true,
      run: (tc, args) =>
        tc.mutate(async (tx) => {
          await envelopes.removeField(tx, tc.ctx, args.envelopeId, String(args.fieldId));
          return { success: true as const };
        }),
      text: () => 'The field was removed.',
    }),

    defineTool({
      name: 'send_envelope',
      title: 'Send a draft envelope',
      description: `Sends a DRAFT: it becomes SENT and each SIGNER and APPROVER gets an email invitation; answers their signing links. Every SIGNER must have a SIGNATURE field by then. meta overrides the invitation's subject, message and redirectUrl.
Cost: ${usd('envelope_send')} (plus ${usd('verification_create')} per recipient with verificationRequired); test-mode keys are never charged. Requires idempotencyKey: a retry with the same key returns the same answer and charges once.
Errors: ENVELOPE_NOT_FOUND, ALREADY_COMPLETED (not a DRAFT any more), ENVELOPE_CANCELLED, VALIDATION_ERROR (a SIGNER without a SIGNATURE field), INSUFFICIENT_BALANCE, SANDBOX_LIMIT_REACHED, IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_KEY_IN_USE.`,
      input: { envelopeId: ZEnvelopeIdArg, meta: ZMeta.optional().describe('Overrides for the invitation email: subject, message, redirectUrl'), idempotencyKey: ZIdempotencyKey },
      output: ZSendResult.shape,
      price: 'envelope_send',
      mutates: true,
      run: (tc, args) => tc.mutate((tx) => envelopes.send(tx, tc.ctx, args.envelopeId, args.meta)),
      text: (r) => [`Envelope ${r.envelopeId} is ${r.status}. Signing links:`, ...r.recipients.map((x) => `- ${x.name} <${x.email}>: ${x.signingUrl}`)].join('\n'),
    }),

    defineTool({
      name: 'resend_envelope',
      title: 'Remind the recipients',
      description: `Emails a reminder to every recipient who still has to sign or approve and whose turn it is. Answers who was reminded.
Free. idempotencyKey is optional: with one, a retry sends no second reminder.
Errors: ENVELOPE_NOT_FOUND, ENVELOPE_ALREADY_COMPLETE, ENVELOPE_CANCELLED, ALL_SIGNED, INVALID_STATE (not sent yet: a DRAFT, or PENDING while the invitations go out), IDEMPOTENCY_KEY_REUSED.`,
      input: { envelopeId: ZEnvelopeIdArg, idempotencyKey: ZIdempotencyKey.optional() },
      output: ZResendResult.shape,
      mutates: true,
      run: (tc, args) => tc.mutate((tx) => envelopes.resend(tx, tc.ctx, args.envelopeId)),
      text: (r) => `Reminded ${r.resentTo.length} recipient(s): ${r.resentTo.map((x) => x.email).join(', ')}`,
    }),

    defineTool({
      name: 'cancel_envelope',
      title: 'Cancel an envelope',
      description: `Cancels (voids) an envelope in any state but COMPLETED: it ends CANCELLED, its signing links stop working, and the charge for it is refunded. Cancelling a cancelled envelope changes nothing.
Free. idempotencyKey is optional.
Errors: ENVELOPE_NOT_FOUND, CANNOT_DELETE_COMPLETED, IDEMPOTENCY_KEY_REUSED.`,
      input: { envelopeId: ZEnvelopeIdArg, idempotencyKey: ZIdempotencyKey.optional() },
      output: ZSuccess.shape,
      mutates: true,
      run: (tc, args) => tc.mutate((tx) => envelopes.remove(tx, tc.ctx, args.envelopeId)),
      text: () => 'The envelope is cancelled; its signing links no longer work and its charge is refunded.',
    }),

    defineTool({
      name: 'get_envelope',
      title: 'Get an envelope',
      description: 'The stored copy of one envelope: status, recipients (with signingStatus, readStatus and signing links), fields (with fieldId) and its events. Free. Errors: ENVELOPE_NOT_FOUND.',
      input: { envelopeId: ZEnvelopeIdArg },
      output: ZEnvelope.shape,
      mutates: false,
      run: (tc, args) => envelopes.get(tc.db, tc.ctx, args.envelopeId),
      text: renderEnvelope,
    }),

    defineTool({
      name: 'get_envelope_status',
      title: 'Get the live status of an envelope',
      description:
        'The live status of one envelope from the signing engine: DRAFT, PENDING, SENT, PARTIALLY_SIGNED, COMPLETED, REJECTED, EXPIRED or CANCELLED, and for each recipient whether they opened and signed. Poll this to know when to download_envelope. Free. Errors: ENVELOPE_NOT_FOUND.',
      input: { envelopeId: ZEnvelopeIdArg },
      output: ZLiveStatus.shape,
      mutates: false,
      run: (tc, args) => envelopes.liveStatus(tc.db, tc.ctx, args.envelopeId),
      text: renderEnvelope,
    }),

    defineTool({
      name: 'list_envelopes',
      title: 'List envelopes',
      description: 'Your envelopes, newest first, optionally only those in one status. Free. Errors: VALIDATION_ERROR (bad paging or status).',
      input: { ...pagingInput, status: ZListQuery.shape.status.describe('Only envelopes in this status') },
      output: pageOutput(ZEnvelope),
      mutates: false,
      async run(tc, args) {
        const paging = toPaging(args);
        return pageOf(paging, await envelopes.list(tc.db, tc.ctx, { status: args.status }, paging));
      },
      text: (p) => [`Envelopes ${countText(p)}`, ...p.data.map((e) => `- ${e.envelopeId} "${e.title ?? ''}": ${e.status}`)].join('\n'),
    }),

    defineTool({
      name: 'download_envelope',
      title: 'Download the signed PDF',
      description: `The sealed, signed PDF of a COMPLETED envelope (version signed, the default) or the original upload (version original). The PDF is inlined as base64 in pdfBase64 while it fits this HTTP request's inline budget: ${deps.inlineMaxBytes} bytes of PDF per POST /mcp, shared by every call of a JSON-RPC batch. A larger PDF, or one past the budget, comes without pdfBase64: GET downloadUrl (REST's GET /v1/envelopes/{id}/download) with the same Authorization header you send to /mcp (your API key or wallet JWT). Free.
Errors: ENVELOPE_NOT_FOUND, ENVELOPE_NOT_COMPLETE (signed before COMPLETED), DOCUMENT_PURGED (past its retention).`,
      input: { envelopeId: ZEnvelopeIdArg, version: z.enum(['signed', 'original']).default('signed').describe('signed (default): the sealed PDF; original: the upload') },
      output: {
        envelopeId: z.string(),
        version: z.enum(['signed', 'original']),
        filename: z.string(),
        contentType: z.literal('application/pdf'),
        sizeBytes: z.number().int(),
        pdfBase64: z.string().optional().describe(`The PDF, base64; absent when it does not fit this request's inline budget (${deps.inlineMaxBytes} bytes of PDF per POST /mcp, a batch included): fetch downloadUrl instead`),
        downloadUrl: z.string().describe('Always present: GET it with the same Authorization header you send to /mcp (API key or wallet JWT) for the PDF itself (REST GET /v1/envelopes/{id}/download)'),
      },
      mutates: false,
      // Loaded in the request's turn (one document in memory at a time, however large the batch).
      run: (tc, args) =>
        tc.inline.inTurn(async (fits) => {
          const { bytes, filename } = await envelopes.download(tc.db, tc.ctx, args.envelopeId, args.version);
          return {
            envelopeId: args.envelopeId,
            version: args.version,
            filename,
            contentType: 'application/pdf' as const,
            sizeBytes: bytes.byteLength,
            ...(fits(bytes.byteLength) ? { pdfBase64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') } : {}),
            downloadUrl: `${deps.publicUrl}/v1/envelopes/${encodeURIComponent(args.envelopeId)}/download?version=${args.version}`,
          };
        }),
      text: (d) =>
        d.pdfBase64 !== undefined
          ? `${d.filename} (${d.sizeBytes} bytes, application/pdf) is in structuredContent.pdfBase64; also at ${d.downloadUrl}`
          : `${d.filename} is ${d.sizeBytes} bytes, past this request's inline budget of ${deps.inlineMaxBytes} bytes: GET ${d.downloadUrl} with the same Authorization header`,
    }),
  ];
}
