import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { requestContext } from '../../http/auth.js';
import type { ErrorCode } from '../../errors.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { readUpload } from '../../http/multipart.js';
import { ZPage, ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import { FIELD_RULE_ERRORS } from './field-rules.schemas.js';
import {
  ZAddFields,
  ZAddFieldsResult,
  ZCreatePayload,
  ZDownloadQuery,
  ZDraftCreated,
  ZEnvelope,
  ZEnvelopeIdParam,
  ZFieldIdParam,
  ZFieldPatch,
  ZField,
  ZListQuery,
  ZLinkReissued,
  ZReassignBody,
  ZRecipientReplaced,
  ZLiveStatus,
  ZRecipientParam,
  ZResendResult,
  ZSendBody,
  ZSendResult,
  ZSuccess,
  type TCreatePayload,
} from './envelopes.schemas.js';
import type { EnvelopesService } from './envelopes.service.js';
import type { FieldEdits } from './field-edits.js';
import type { RecipientLinks } from './recipient-links.js';
import type { RecipientHandover } from './recipient-handover.js';

export type RouteDeps = {
  db: Db;
  envelopes: EnvelopesService;
  links: RecipientLinks;
  handover: RecipientHandover;
  fieldEdits: FieldEdits;
  commitMutation: CommitMutation;
  maxPdfBytes: number;
};

// SERVICE_UNAVAILABLE: the queue for the PDF workers is full for this customer or in all (Retry-After).
const UPLOAD_ERRORS: ErrorCode[] = ['MISSING_PDF', 'MISSING_PAYLOAD', 'INVALID_JSON', 'INVALID_PDF', 'OUT_OF_SCOPE_V1', 'PDF_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RECIPIENT_NOT_FOUND', 'SERVICE_UNAVAILABLE'];
// X402_NOT_APPLICABLE: an x402 payment cannot also pay a gated recipient's verification.
const BILLING_ERRORS: ErrorCode[] = ['INSUFFICIENT_BALANCE', 'INSUFFICIENT_CREDITS', 'SANDBOX_LIMIT_REACHED', 'IDEMPOTENCY_KEY_REQUIRED', 'X402_NOT_APPLICABLE'];
// NOT_SUPPORTED_BY_ENGINE: `reminders` or `expiryWarningDays` with the documenso engine.
const ENGINE_ERRORS: ErrorCode[] = ['DOCUMENSO_UNAVAILABLE', 'NOT_SUPPORTED_BY_ENGINE'];
// The field routes and send also take the dashboard cookie (with X-CSRF-Token): the field editor saves through them.
const EDITOR = { sessionCookie: true, prepareLink: true } as const;
const EDITOR_SECURITY = [...SECURITY.mutate, { sessionCookie: [] }];

const ZMultipartDoc = z.object({
  pdf: z.string().meta({ format: 'binary' }).describe('The PDF (binary). Up to 10 `pdf` parts are joined, in order, into one document.'),
  payload: ZCreatePayload.describe('JSON (part Content-Type application/json, or none). An empty or absent fields array places fields from {{type, rN}} markers in the PDF text. A SIGNER or APPROVER with verificationRequired: true must confirm an emailed code before signing; each is charged one verification (USD 0.50) when the envelope is sent.'),
});

/** Reads and checks the multipart upload: the PDF parts and the JSON payload. */
function readEnvelopeUpload(request: FastifyRequest, deps: RouteDeps): { payload: TCreatePayload; parts: string[] } {
  // `file` too: what templates and most other APIs call the part, and what people type first.
  return readUpload(request.body, { fileParts: ['pdf', 'file'], missingFile: 'MISSING_PDF', maxBytes: deps.maxPdfBytes, schema: ZCreatePayload });
}

export function envelopesRoutes(deps: RouteDeps) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const { envelopes, commitMutation } = deps;
    const tags = ['Envelopes'];

    async function createHandler(request: FastifyRequest, reply: Parameters<CommitMutation>[1], forceDraft: boolean) {
      const ctx = requestContext(request);
      const { payload, parts } = readEnvelopeUpload(request, deps);
      const plan = await envelopes.plan(ctx, { payload, parts, draft: forceDraft || payload.draft === true });
      return envelopes.commitPlanned(deps.db, plan, () =>
        commitMutation(request, reply, async (tx) => {
          const { dto } = await envelopes.create(tx, ctx, plan);
          if (forceDraft) {
            const { envelopeId, title, engineNumericId, engineEnvelopeId, recipients, fields, createdAt } = dto;
            return { status: 201, body: { envelopeId, status: 'DRAFT', title, engineNumericId, engineEnvelopeId, recipients, fields, createdAt } };
          }
          return { status: 201, body: dto };
        }),
      );
    }

    r.post('/v1/envelopes', {
      // A draft is not charged: an x402 caller pays what an unpriced mutation costs (X402_MIN_PRICE).
      config: { auth: 'customer', idempotency: 'required', price: 'envelope_create', x402Price: (request) => (readEnvelopeUpload(request, deps).payload.draft ? undefined : 'envelope_create') },
      schema: {
        operationId: 'createEnvelope',
        tags,
        summary: 'Create an envelope from a PDF and its recipients, and send it (or keep it as a draft with draft: true)',
        description: 'multipart/form-data with `pdf` (one to ten parts) and `payload` (JSON). Answers PENDING; the envelope becomes SENT once the invitations are out, and the signing links work at once. Every SIGNER must sign: each needs at least one SIGNATURE field (by coordinates or a `{{signature, rN}}` marker), else 400 VALIDATION_ERROR naming the recipient (a draft may lack them until it is sent; its send answers the same). Header X-Service-Test-Mode: true makes it a free test send (outbox only; the sealed PDF is marked TEST); the header has effect on this route only. With draft: true it is a free DRAFT (an x402 payer pays X402_MIN_PRICE, and its 402 quotes that once the body is read). `reminders` ({firstAfterDays, everyDays, max}) and `expiryWarningDays` schedule automatic reminder and expiry-warning emails to whoever must still act (absent: the account\'s defaults; null: none); each one sent is listed as RECIPIENT_REMINDED or RECIPIENT_EXPIRY_WARNED and delivered as envelope.reminder_sent to webhooks that name it (docs/reminders.md).',
        consumes: ['multipart/form-data'],
        security: [...SECURITY.mutate],
        body: ZMultipartDoc,
        response: { 201: ZEnvelope, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, IDEMPOTENCY_ERRORS, UPLOAD_ERRORS, BILLING_ERRORS, ENGINE_ERRORS, FIELD_RULE_ERRORS) },
      },
      // The multipart body is checked by readUpload; the schema above documents it.
      validatorCompiler: () => (data: unknown) => ({ value: data }),
      handler: (request, reply) => createHandler(request, reply, false),
    });

    r.post('/v1/envelopes/draft', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'createDraftEnvelope',
        tags,
        summary: 'Create a DRAFT envelope (no email, no charge); add fields, then send it',
        consumes: ['multipart/form-data'],
        security: [...SECURITY.mutate],
        body: ZMultipartDoc,
        response: { 201: ZDraftCreated, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, IDEMPOTENCY_ERRORS, UPLOAD_ERRORS, ENGINE_ERRORS, FIELD_RULE_ERRORS) },
      },
      validatorCompiler: () => (data: unknown) => ({ value: data }),
      handler: (request, reply) => createHandler(request, reply, true),
    });

    // The same list under two paths: /v1/envelopes and the account area's history.
    for (const [url, operationId, summary, routeTags] of [
      ['/v1/envelopes', 'listEnvelopes', 'List envelopes, newest first', tags],
      ['/v1/account/envelopes', 'listAccountEnvelopes', 'Envelope history, newest first', ['Account']],
    ] as const) {
      r.get(url, {
        config: { auth: 'customer' },
        schema: {
          operationId,
          tags: [...routeTags],
          summary,
          security: [...SECURITY.read],
          querystring: ZPagingQuery.extend(ZListQuery.shape),
          response: { 200: ZPage(ZEnvelope), ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS) },
        },
        handler: async (request) => {
          const paging = resolvePaging(request.query);
          const { rows, total } = await envelopes.list(deps.db, requestContext(request), { status: request.query.status }, paging);
          return toPage(paging, rows, total);
        },
      });
    }

    r.get('/v1/envelopes/:id', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getEnvelope',
        tags,
        summary: 'The stored copy of an envelope, with its events',
        security: [...SECURITY.read],
        params: ZEnvelopeIdParam,
        response: { 200: ZEnvelope, ...errorResponses(CUSTOMER_ERRORS, ['ENVELOPE_NOT_FOUND']) },
      },
      handler: async (request) => envelopes.get(deps.db, requestContext(request), request.params.id),
    });

    r.get('/v1/envelopes/:id/status', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getEnvelopeStatus',
        tags,
        summary: 'Live status from the signing engine; the stored copy is corrected where they differ',
        security: [...SECURITY.read],
        params: ZEnvelopeIdParam,
        response: { 200: ZLiveStatus, ...errorResponses(CUSTOMER_ERRORS, ['ENVELOPE_NOT_FOUND'], ENGINE_ERRORS) },
      },
      handler: async (request) => envelopes.liveStatus(deps.db, requestContext(request), request.params.id),
    });

    r.delete('/v1/envelopes/:id', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'cancelEnvelope',
        tags,
        summary: 'Cancel (void) an envelope: it ends CANCELLED, links stop working, the charge is refunded',
        security: [...SECURITY.mutate],
        params: ZEnvelopeIdParam,
        response: { 200: ZSuccess, ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['ENVELOPE_NOT_FOUND', 'CANNOT_DELETE_COMPLETED'], ENGINE_ERRORS) },
      },
      handler: (request, reply) => commitMutation(request, reply, async (tx) => ({ status: 200, body: await envelopes.remove(tx, requestContext(request), request.params.id) })),
    });

    r.post('/v1/envelopes/:id/send', {
      config: { auth: 'customer', idempotency: 'required', price: 'envelope_send', ...EDITOR },
      schema: {
        operationId: 'sendEnvelope',
        tags,
        summary: 'Send a DRAFT: it becomes SENT and the invitations go out',
        security: EDITOR_SECURITY,
        params: ZEnvelopeIdParam,
        body: ZSendBody,
        response: {
          200: ZSendResult,
          ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, BILLING_ERRORS, ['ENVELOPE_NOT_FOUND', 'ALREADY_COMPLETED', 'ENVELOPE_CANCELLED', 'SEND_FAILED'], ENGINE_ERRORS),
        },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => ({ status: 200, body: await envelopes.send(tx, requestContext(request), request.params.id, request.body?.meta) })),
    });

    r.post('/v1/envelopes/:id/resend', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'resendEnvelope',
        tags,
        summary: 'Remind every recipient who still has to act and may act now',
        security: [...SECURITY.mutate],
        params: ZEnvelopeIdParam,
        response: { 200: ZResendResult, ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['ENVELOPE_NOT_FOUND', 'ENVELOPE_ALREADY_COMPLETE', 'ENVELOPE_CANCELLED', 'ALL_SIGNED', 'INVALID_STATE'], ENGINE_ERRORS) },
      },
      handler: async (request, reply) => {
        const ctx = requestContext(request);
        // A remote engine is reminded before the transaction opens: no lock is held while it answers.
        const reminded = await envelopes.remindOutside(deps.db, ctx, request.params.id);
        return commitMutation(request, reply, async (tx) => ({ status: 200, body: await envelopes.resend(tx, ctx, request.params.id, reminded) }));
      },
    });

    r.post('/v1/envelopes/:id/recipients/:recipient/link', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'reissueRecipientLink',
        tags,
        summary: "Revoke one recipient's signing link and issue a new one, emailed to them",
        description:
          'For a link that was forwarded or leaked: the old link stops working at once (404 on the signing page) and the new one is answered, shown by later reads, and emailed in a new invitation to a recipient who was invited and has not acted yet (a recipient whose turn has not come gets it with their invitation). The event log of the audit certificate records LINK_REISSUED. The envelope must be live: not COMPLETED (400 ENVELOPE_ALREADY_COMPLETE), CANCELLED (400 ENVELOPE_CANCELLED), REJECTED or EXPIRED (409 INVALID_STATE); the recipient must not have signed, approved or declined yet (409 ALREADY_ACTED). Free; an Idempotency-Key is accepted, and a retry with it answers the same new link without revoking it again. Not available with the documenso engine (400 NOT_SUPPORTED_BY_ENGINE).',
        security: [...SECURITY.mutate],
        params: ZRecipientParam,
        response: {
          200: ZLinkReissued,
          ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, IDEMPOTENCY_ERRORS, ['ENVELOPE_NOT_FOUND', 'RECIPIENT_NOT_FOUND', 'ALREADY_ACTED', 'ENVELOPE_ALREADY_COMPLETE', 'ENVELOPE_CANCELLED', 'INVALID_STATE', 'NOT_SUPPORTED_BY_ENGINE']),
        },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.links.reissue(tx, requestContext(request), request.params.id, request.params.recipient) })),
    });

    r.patch('/v1/envelopes/:id/recipients/:recipient', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'reassignRecipient',
        tags,
        summary: 'Replace a recipient who has not acted (new name and/or email); on a DRAFT, edit them',
        description:
          "The new person takes the recipient's place: their fields, role and place in the signing order. The old link stops working at once (404 SIGNING_LINK_INVALID), consent starts over, and the new person is emailed an invitation with their own link when it is their turn (none with embedded delivery). A verification-gated place gets a new verification for the new address, charged like the first (USD 0.50). The event list shows RECIPIENT_REASSIGNED with from, to and by; the audit certificate lists the hand-over; webhooks that name envelope.recipient_replaced are told. Refused when the recipient signed, approved or declined (409 ALREADY_ACTED), when another recipient has the new email (409 RECIPIENT_EMAIL_TAKEN), after 5 replacements of one recipient or 50 hand-overs of one envelope (409 HANDOVER_LIMIT_REACHED), and on an ended envelope (400 ENVELOPE_ALREADY_COMPLETE, 400 ENVELOPE_CANCELLED, 409 INVALID_STATE). On a DRAFT it is a plain edit (no event, no email, not counted). Free but for a gated place's verification; an Idempotency-Key makes a retry answer the same. Not available with the documenso engine (400 NOT_SUPPORTED_BY_ENGINE).",
        security: [...SECURITY.mutate],
        params: ZRecipientParam,
        body: ZReassignBody,
        response: {
          200: ZRecipientReplaced,
          ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, ['ENVELOPE_NOT_FOUND', 'RECIPIENT_NOT_FOUND', 'ALREADY_ACTED', 'RECIPIENT_EMAIL_TAKEN', 'HANDOVER_LIMIT_REACHED', 'ENVELOPE_ALREADY_COMPLETE', 'ENVELOPE_CANCELLED', 'INVALID_STATE', 'NOT_SUPPORTED_BY_ENGINE', 'INSUFFICIENT_BALANCE', 'INSUFFICIENT_CREDITS', 'SANDBOX_LIMIT_REACHED', 'X402_NOT_APPLICABLE']),
        },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.handover.reassign(tx, requestContext(request), request.params.id, request.params.recipient, request.body) })),
    });

    r.get('/v1/envelopes/:id/download', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'downloadEnvelope',
        tags,
        summary: 'The sealed PDF (version=signed, default) or the original upload (version=original)',
        security: [...SECURITY.read],
        params: ZEnvelopeIdParam,
        querystring: ZDownloadQuery,
        produces: ['application/pdf'],
        response: {
          200: z.string().describe('application/pdf'),
          ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, ['ENVELOPE_NOT_FOUND', 'ENVELOPE_NOT_COMPLETE', 'DOWNLOAD_FAILED', 'DOCUMENT_PURGED'], ENGINE_ERRORS),
        },
      },
      handler: async (request, reply) => {
        const { stream, size, filename } = await envelopes.openDownload(deps.db, requestContext(request), request.params.id, request.query.version);
        return reply
          .type('application/pdf')
          .header('content-disposition', `attachment; filename="${filename}"`)
          .header('content-length', size)
          // Piped from the store as the client reads it (never serialized); the string schema only documents the PDF body.
          .send(stream as unknown as string);
      },
    });

    r.post('/v1/envelopes/:id/fields', {
      config: { auth: 'customer', idempotency: 'optional', ...EDITOR },
      schema: {
        operationId: 'addEnvelopeFields',
        tags,
        summary: 'Add fields to a DRAFT envelope',
        security: EDITOR_SECURITY,
        params: ZEnvelopeIdParam,
        body: ZAddFields,
        response: { 200: ZAddFieldsResult, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, ['ENVELOPE_NOT_FOUND', 'RECIPIENT_NOT_FOUND', 'ENVELOPE_NOT_DRAFT', 'FIELD_CREATION_FAILED'], ENGINE_ERRORS, FIELD_RULE_ERRORS) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => ({ status: 200, body: await envelopes.addFields(tx, requestContext(request), request.params.id, request.body.fields) })),
    });

    r.patch('/v1/envelopes/:id/fields/:fid', {
      config: { auth: 'customer', idempotency: 'optional', ...EDITOR },
      schema: {
        operationId: 'updateEnvelopeField',
        tags,
        summary: "Move or resize a DRAFT envelope's field (page, position, size in percent of the page)",
        description: 'Give any of page, positionXPercent, positionYPercent, widthPercent, heightPercent (or the Alt names positionX…); the rest stays. The merged placement must stay on the page (400 VALIDATION_ERROR). The field keeps its id, type and recipient. Free.',
        security: EDITOR_SECURITY,
        params: ZFieldIdParam,
        body: ZFieldPatch,
        response: { 200: ZField, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, ['ENVELOPE_NOT_FOUND', 'INVALID_FIELD_ID', 'ENVELOPE_NOT_DRAFT', 'NOT_SUPPORTED_BY_ENGINE', 'CSRF_TOKEN_INVALID']) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.fieldEdits.update(tx, requestContext(request), request.params.id, request.params.fid, request.body) })),
    });

    r.delete('/v1/envelopes/:id/fields/:fid', {
      config: { auth: 'customer', idempotency: 'optional', ...EDITOR },
      schema: {
        operationId: 'removeEnvelopeField',
        tags,
        summary: 'Remove a field from a DRAFT envelope (204; Alt: ?alt=1 answers 200 {success: true})',
        security: EDITOR_SECURITY,
        params: ZFieldIdParam,
        querystring: z.object({ alt: z.enum(['0', '1', 'true', 'false']).optional() }),
        response: { 204: z.null().describe('Removed'), 200: ZSuccess, ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['ENVELOPE_NOT_FOUND', 'INVALID_FIELD_ID', 'ENVELOPE_NOT_DRAFT', 'DELETE_FAILED', 'FIELD_HAS_DEPENDENTS'], ENGINE_ERRORS) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => {
          await envelopes.removeField(tx, requestContext(request), request.params.id, request.params.fid);
          const alt = request.query.alt === '1' || request.query.alt === 'true';
          return alt ? { status: 200, body: { success: true } } : { status: 204, body: null };
        }),
    });
  };
}
