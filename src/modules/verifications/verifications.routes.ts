import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Db } from '../../db/client.js';
import type { ErrorCode } from '../../errors.js';
import { requestContext } from '../../http/auth.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { ZPage, ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import { ZCreateVerification, ZListQuery, ZVerification, ZVerificationIdParam } from './verifications.schemas.js';
import type { VerificationsService } from './verifications.service.js';

const BILLING_ERRORS: ErrorCode[] = ['INSUFFICIENT_BALANCE', 'SANDBOX_LIMIT_REACHED', 'IDEMPOTENCY_KEY_REQUIRED', 'PAYMENT_REQUIRED', 'PAYMENT_INVALID'];

const HOW = `type email: verificationUrl opens our page, where the person asks for a 6-digit code sent to the address
(valid 10 minutes; the next code after 30 s, 1 min, 5 min, 15 min, then hourly) and enters it; the right code
verifies, the fifth wrong code fails the verification; it expires 24 hours after creation. type id_document:
verificationUrl is Stripe Identity's hosted page (works once, for 48 hours, which is also the expiry); Stripe's
result arrives by its webhook, or on GET /v1/verifications/{id}/status. Verifications send no webhook events.`;

export function verificationsRoutes(deps: { db: Db; verifications: VerificationsService; commitMutation: CommitMutation }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const { verifications, commitMutation } = deps;
    const tags = ['Verifications'];

    r.post('/v1/verifications', {
      config: { auth: 'customer', idempotency: 'required', price: 'verification_create' },
      schema: {
        operationId: 'createVerification',
        tags,
        summary: 'Start an identity verification: an emailed code (email) or an identity document (Stripe Identity)',
        description: HOW,
        security: [...SECURITY.mutate],
        body: ZCreateVerification,
        response: {
          201: ZVerification,
          ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, BILLING_ERRORS, ['ID_VERIFICATION_NOT_CONFIGURED', 'IDENTITY_PROVIDER_UNAVAILABLE']),
        },
      },
      handler: async (request, reply) => {
        const ctx = requestContext(request);
        const prepared = await verifications.prepareCreate(ctx, request.body);
        return commitMutation(request, reply, async (tx) => ({ status: 201, body: await verifications.create(tx, ctx, prepared) }));
      },
    });

    r.get('/v1/verifications', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'listVerifications',
        tags,
        summary: 'List verifications, newest first (the stored copies)',
        security: [...SECURITY.read],
        querystring: ZPagingQuery.extend(ZListQuery.shape),
        response: { 200: ZPage(ZVerification), ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS) },
      },
      handler: async (request) => {
        const paging = resolvePaging(request.query);
        const { rows, total } = await verifications.list(deps.db, requestContext(request), request.query.status, paging);
        return toPage(paging, rows, total);
      },
    });

    r.get('/v1/verifications/:id', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getVerification',
        tags,
        summary: 'The stored copy of a verification (a pending one past expiresAt shows expired)',
        security: [...SECURITY.read],
        params: ZVerificationIdParam,
        response: { 200: ZVerification, ...errorResponses(CUSTOMER_ERRORS, ['VERIFICATION_NOT_FOUND']) },
      },
      handler: async (request) => verifications.get(deps.db, requestContext(request), request.params.id),
    });

    r.get('/v1/verifications/:id/status', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getVerificationStatus',
        tags,
        summary: 'Live status from the provider, which wins; the stored copy is corrected where they differ',
        security: [...SECURITY.read],
        params: ZVerificationIdParam,
        response: { 200: ZVerification, ...errorResponses(CUSTOMER_ERRORS, ['VERIFICATION_NOT_FOUND', 'IDENTITY_PROVIDER_UNAVAILABLE']) },
      },
      handler: async (request) => verifications.liveStatus(deps.db, requestContext(request), request.params.id),
    });

    r.post('/v1/verifications/:id/cancel', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'cancelVerification',
        tags,
        summary: 'Cancel a pending verification (free; the creation charge is kept); canceling again answers the same',
        description: "The link stops working and Stripe's session (id_document) is canceled. A signing recipient's verification ends with its envelope and cannot be canceled here.",
        security: [...SECURITY.mutate],
        params: ZVerificationIdParam,
        response: {
          200: ZVerification,
          ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['VERIFICATION_NOT_FOUND', 'VERIFICATION_NOT_PENDING', 'VERIFICATION_FAILED', 'VERIFICATION_EXPIRED', 'VERIFICATION_NOT_CANCELABLE', 'IDENTITY_PROVIDER_UNAVAILABLE']),
        },
      },
      handler: async (request, reply) => {
        const ctx = requestContext(request);
        const live = await verifications.prepareCancel(deps.db, ctx, request.params.id);
        return commitMutation(request, reply, async (tx) => ({ status: 200, body: await verifications.cancel(tx, ctx, request.params.id, live) }));
      },
    });
  };
}
