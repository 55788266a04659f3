import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import type { ErrorCode } from '../../errors.js';
import { requestContext } from '../../http/auth.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { readUpload } from '../../http/multipart.js';
import { ZPage, ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import { FIELD_RULE_ERRORS } from '../envelopes/field-rules.schemas.js';
import { ZEnvelope, ZFieldPatch, ZSuccess } from '../envelopes/envelopes.schemas.js';
import {
  ZAddTemplateFields,
  ZAddTemplateFieldsResult,
  ZAltQuery,
  ZFromTemplate,
  ZFromTemplateAlt,
  ZTemplate,
  ZTemplateField,
  ZTemplateFieldParam,
  ZTemplateIdParam,
  ZTemplatePayload,
  ZTemplateSummary,
  ZTemplateUpdated,
  ZUpdateTemplate,
  type TFromTemplate,
} from './templates.schemas.js';
import type { TemplatesService } from './templates.service.js';

export type TemplateRouteDeps = { db: Db; templates: TemplatesService; commitMutation: CommitMutation; maxPdfBytes: number };

// SERVICE_UNAVAILABLE: the queue for the PDF workers is full for this customer or in all (Retry-After).
const UPLOAD_ERRORS: ErrorCode[] = ['MISSING_FILE', 'MISSING_PAYLOAD', 'INVALID_JSON', 'INVALID_PDF', 'OUT_OF_SCOPE_V1', 'PDF_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RECIPIENT_NOT_FOUND', 'SERVICE_UNAVAILABLE'];
const FROM_TEMPLATE_ERRORS: ErrorCode[] = ['INVALID_TEMPLATE_ID', 'TEMPLATE_NOT_FOUND', 'INVALID_TEMPLATE_RECIPIENT_ID', 'RECIPIENT_NOT_FOUND'];
const BILLING_ERRORS: ErrorCode[] = ['INSUFFICIENT_BALANCE', 'SANDBOX_LIMIT_REACHED', 'IDEMPOTENCY_KEY_REQUIRED'];
// NOT_SUPPORTED_BY_ENGINE: `reminders` or `expiryWarningDays` with the documenso engine.
const ENGINE_ERRORS: ErrorCode[] = ['DOCUMENSO_UNAVAILABLE', 'NOT_SUPPORTED_BY_ENGINE'];

const SLOTS = `Slots: the payload's recipients are the template's slots, numbered 1..n in order (the slot \`id\`). A field names
its slot by \`recipientId\` (the slot id) or \`recipientEmail\` (the slot's email); with no fields, \`{{type, rN}}\` markers in
the PDF place them as for envelopes (rN is slot N). Every SIGNER slot needs a SIGNATURE field, so that every envelope made
from the template can be sent. The slot emails and names are placeholders: a from-template call maps each slot to a person.`;

const MAPPING = `Slot mapping: recipients [{id, email, name}] map people to the template's slots. Every id must name a slot
(400 INVALID_TEMPLATE_RECIPIENT_ID otherwise); every slot must be mapped exactly once (404 RECIPIENT_NOT_FOUND names the
first slot left unmapped; a slot mapped twice, or one email given twice, is 400 VALIDATION_ERROR). Role, signingOrder and
verificationRequired come from the slot; the PDF and fields from the template. The template's meta is the default, the
call's meta overrides it key by key. sendImmediately (default true) answers PENDING and charges USD 0.10 (event
envelope.sent once distributed); false answers a DRAFT, free until POST /v1/envelopes/{id}/send (USD 0.10).`;

const ZMultipartTemplate = z.object({
  file: z.string().meta({ format: 'binary' }).describe('The PDF (binary); a `pdf` part is accepted too. Up to 10 parts are joined, in order, into one document.'),
  payload: ZTemplatePayload.describe('JSON (part Content-Type application/json, or none): the slots, fields and meta of the template.'),
});

export function templatesRoutes(deps: TemplateRouteDeps) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const { templates, commitMutation } = deps;
    const tags = ['Templates'];

    r.post('/v1/templates', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'createTemplate',
        tags,
        summary: 'Save a PDF with its recipient slots and fields as a template (free)',
        description: SLOTS,
        consumes: ['multipart/form-data'],
        security: [...SECURITY.mutate],
        body: ZMultipartTemplate,
        response: { 201: ZTemplate, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, IDEMPOTENCY_ERRORS, UPLOAD_ERRORS, FIELD_RULE_ERRORS) },
      },
      // The multipart body is checked by readUpload; the schema above documents it.
      validatorCompiler: () => (data: unknown) => ({ value: data }),
      handler: async (request, reply) => {
        const ctx = requestContext(request);
        const upload = readUpload(request.body, { fileParts: ['file', 'pdf'], missingFile: 'MISSING_FILE', maxBytes: deps.maxPdfBytes, schema: ZTemplatePayload });
        const plan = await templates.plan(ctx, upload);
        return commitMutation(request, reply, async (tx) => ({ status: 201, body: await templates.create(tx, ctx, plan) }));
      },
    });

    r.get('/v1/templates', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'listTemplates',
        tags,
        summary: 'List templates, newest first (items without their fields)',
        security: [...SECURITY.read],
        querystring: ZPagingQuery,
        response: { 200: ZPage(ZTemplateSummary), ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS) },
      },
      handler: async (request) => {
        const paging = resolvePaging(request.query);
        const { rows, total } = await templates.list(deps.db, requestContext(request), paging);
        return toPage(paging, rows, total);
      },
    });

    r.get('/v1/templates/:id', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getTemplate',
        tags,
        summary: 'A template with its recipient slots and fields',
        security: [...SECURITY.read],
        params: ZTemplateIdParam,
        response: { 200: ZTemplate, ...errorResponses(CUSTOMER_ERRORS, ['INVALID_ID', 'TEMPLATE_NOT_FOUND']) },
      },
      handler: async (request) => templates.get(deps.db, requestContext(request), request.params.id),
    });

    r.put('/v1/templates/:id', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'updateTemplate',
        tags,
        summary: 'Change the title and/or the default meta of a template (an empty body is VALIDATION_ERROR)',
        description: 'meta replaces the stored meta as a whole. Slots and the PDF never change (make a new template); fields change through /v1/templates/{id}/fields. UPDATE_FAILED is never answered: Signet stores templates itself.',
        security: [...SECURITY.mutate],
        params: ZTemplateIdParam,
        body: ZUpdateTemplate,
        response: { 200: ZTemplateUpdated, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, ['INVALID_ID', 'TEMPLATE_NOT_FOUND']) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => ({ status: 200, body: await templates.update(tx, requestContext(request), request.params.id, request.body) })),
    });

    r.delete('/v1/templates/:id', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'deleteTemplate',
        tags,
        summary: 'Delete a template (204; Alt: ?alt=1 answers 200 {success: true}); envelopes made from it are unaffected',
        security: [...SECURITY.mutate],
        params: ZTemplateIdParam,
        querystring: ZAltQuery,
        response: { 204: z.null().describe('Deleted'), 200: ZSuccess, ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['INVALID_ID', 'TEMPLATE_NOT_FOUND']) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => {
          await templates.remove(tx, requestContext(request), request.params.id);
          const alt = request.query.alt === '1' || request.query.alt === 'true';
          return alt ? { status: 200, body: { success: true } } : { status: 204, body: null };
        }),
    });

    // The dashboard's field editor saves with its session cookie and X-CSRF-Token, as for drafts.
    const editorSecurity = [...SECURITY.mutate, { sessionCookie: [] }];
    const fieldErrors: ErrorCode[] = ['INVALID_ID', 'TEMPLATE_NOT_FOUND'];

    r.post('/v1/templates/:id/fields', {
      config: { auth: 'customer', idempotency: 'optional', sessionCookie: true },
      schema: {
        operationId: 'addTemplateFields',
        tags,
        summary: 'Add fields to a template, each for a recipient slot (free)',
        description: 'Each field names its slot by recipientId (the slot id) or recipientEmail (the slot\'s email); placement in percent of the page, as for envelopes. A template holds at most 500 fields. Envelopes made from the template afterwards carry the new fields; those made before keep theirs.',
        security: editorSecurity,
        params: ZTemplateIdParam,
        body: ZAddTemplateFields,
        response: { 200: ZAddTemplateFieldsResult, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, fieldErrors, ['RECIPIENT_NOT_FOUND'], FIELD_RULE_ERRORS) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => ({ status: 200, body: await templates.addFields(tx, requestContext(request), request.params.id, request.body.fields) })),
    });

    r.patch('/v1/templates/:id/fields/:fid', {
      config: { auth: 'customer', idempotency: 'optional', sessionCookie: true },
      schema: {
        operationId: 'updateTemplateField',
        tags,
        summary: "Move or resize a template's field (page, position, size in percent of the page)",
        description: 'Give any of page, positionXPercent, positionYPercent, widthPercent, heightPercent (or the Alt names positionX…); the rest stays. The merged placement must stay on the page (400 VALIDATION_ERROR). The field keeps its id, type and slot. Free.',
        security: editorSecurity,
        params: ZTemplateFieldParam,
        body: ZFieldPatch,
        response: { 200: ZTemplateField, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, fieldErrors, ['INVALID_FIELD_ID', 'CSRF_TOKEN_INVALID']) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => ({ status: 200, body: await templates.updateField(tx, requestContext(request), request.params.id, request.params.fid, request.body) })),
    });

    r.delete('/v1/templates/:id/fields/:fid', {
      config: { auth: 'customer', idempotency: 'optional', sessionCookie: true },
      schema: {
        operationId: 'removeTemplateField',
        tags,
        summary: 'Remove a field from a template (204; Alt: ?alt=1 answers 200 {success: true})',
        description: "A SIGNER slot's last SIGNATURE field cannot be removed (400 VALIDATION_ERROR): every envelope made from the template must be sendable.",
        security: editorSecurity,
        params: ZTemplateFieldParam,
        querystring: ZAltQuery,
        response: { 204: z.null().describe('Removed'), 200: ZSuccess, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, IDEMPOTENCY_ERRORS, fieldErrors, ['INVALID_FIELD_ID', 'FIELD_HAS_DEPENDENTS']) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => {
          await templates.removeField(tx, requestContext(request), request.params.id, request.params.fid);
          const alt = request.query.alt === '1' || request.query.alt === 'true';
          return alt ? { status: 200, body: { success: true } } : { status: 204, body: null };
        }),
    });

    const fromTemplateSchema = {
      tags,
      description: MAPPING,
      security: [...SECURITY.mutate],
      response: {
        201: ZEnvelope,
        ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, FROM_TEMPLATE_ERRORS, BILLING_ERRORS, ENGINE_ERRORS, ['FIELD_PREFILL_INVALID'], FIELD_RULE_ERRORS),
      },
    };
    const fromTemplate = async (request: Parameters<CommitMutation>[0], reply: Parameters<CommitMutation>[1], id: string, input: TFromTemplate) => {
      const ctx = requestContext(request);
      const plan = await templates.planEnvelope(deps.db, ctx, id, input);
      return templates.commitPlanned(deps.db, plan, () => commitMutation(request, reply, async (tx) => ({ status: 201, body: await templates.createEnvelope(tx, ctx, plan) })));
    };

    // sendImmediately: false makes a draft, which is not charged: an x402 caller pays X402_MIN_PRICE for it.
    const x402Price = (request: FastifyRequest) => ((request.body as Pick<TFromTemplate, 'sendImmediately'>).sendImmediately === false ? undefined : ('envelope_from_template' as const));
    r.post('/v1/templates/:id/from-template', {
      config: { auth: 'customer', idempotency: 'required', price: 'envelope_from_template', x402Price },
      schema: {
        ...fromTemplateSchema,
        operationId: 'createEnvelopeFromTemplate',
        summary: 'Create an envelope from a template, mapping a person to each recipient slot, and send it (or keep a DRAFT)',
        params: ZTemplateIdParam,
        body: ZFromTemplate,
      },
      handler: (request, reply) => fromTemplate(request, reply, request.params.id, request.body),
    });

    r.post('/v1/envelopes/from-template', {
      config: { auth: 'customer', idempotency: 'required', price: 'envelope_from_template', x402Price },
      schema: {
        ...fromTemplateSchema,
        operationId: 'createEnvelopeFromTemplateAlt',
        summary: 'Alt form of createEnvelopeFromTemplate: the template named by templateId in the body',
        body: ZFromTemplateAlt,
      },
      handler: (request, reply) => {
        const { templateId, ...input } = request.body;
        return fromTemplate(request, reply, templateId, input);
      },
    });
  };
}
