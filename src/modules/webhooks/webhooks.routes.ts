import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { requestContext } from '../../http/auth.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { ZPage, ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import { ZCreateWebhook, ZDeliveriesQuery, ZDelivery, ZDeliveryParams, ZUpdateWebhook, ZWebhook, ZWebhookCreated, ZWebhookIdParam } from './webhooks.schemas.js';
import type { WebhooksService } from './webhooks.service.js';

const VERIFY = `Every delivery is a POST with X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>, X-Service-Event and
X-Service-Delivery-Id (dlv_<uuid>, the same on every attempt). To verify: (1) compute HMAC-SHA256 with the secret over
"<t>.<raw body>", hex; (2) compare it with v1 in constant time; (3) reject when |now - t| > 300 s. The same delivery id may
arrive twice: record ids and answer 2xx without repeating effects. Non-2xx, timeouts and 3xx are retried per the schedule.`;

export function webhooksRoutes(deps: { db: Db; webhooks: WebhooksService; commitMutation: CommitMutation }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const { webhooks, commitMutation } = deps;
    const tags = ['Webhooks'];

    r.post('/v1/webhooks', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'createWebhook',
        tags,
        summary: 'Register a URL for envelope events; the secret is shown once',
        description: VERIFY,
        security: [...SECURITY.mutate],
        body: ZCreateWebhook,
        response: { 201: ZWebhookCreated, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, ['INVALID_WEBHOOK_URL']) },
      },
      handler: async (request, reply) => {
        const input = await webhooks.checkCreate(request.body);
        return commitMutation(request, reply, async (tx) => ({ status: 201, body: await webhooks.create(tx, requestContext(request), input) }));
      },
    });

    r.get('/v1/webhooks', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'listWebhooks',
        tags,
        summary: 'List webhook registrations (without secrets)',
        security: [...SECURITY.read],
        querystring: ZPagingQuery,
        response: { 200: ZPage(ZWebhook), ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS) },
      },
      handler: async (request) => {
        const paging = resolvePaging(request.query);
        const { rows, total } = await webhooks.list(deps.db, requestContext(request), paging);
        return toPage(paging, rows, total);
      },
    });

    r.get('/v1/webhooks/:id', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getWebhook',
        tags,
        summary: 'A webhook registration (without its secret)',
        security: [...SECURITY.read],
        params: ZWebhookIdParam,
        response: { 200: ZWebhook, ...errorResponses(CUSTOMER_ERRORS, ['WEBHOOK_NOT_FOUND']) },
      },
      handler: async (request) => webhooks.get(deps.db, requestContext(request), request.params.id),
    });

    r.put('/v1/webhooks/:id', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'updateWebhook',
        tags,
        summary: 'Change url, events, description, format or active; re-activating resets consecutiveFailures',
        security: [...SECURITY.mutate],
        params: ZWebhookIdParam,
        body: ZUpdateWebhook,
        response: { 200: ZWebhook, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, IDEMPOTENCY_ERRORS, ['WEBHOOK_NOT_FOUND', 'INVALID_WEBHOOK_URL']) },
      },
      handler: async (request, reply) => {
        const input = await webhooks.checkUpdate(request.body);
        return commitMutation(request, reply, async (tx) => ({ status: 200, body: await webhooks.update(tx, requestContext(request), request.params.id, input) }));
      },
    });

    r.delete('/v1/webhooks/:id', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'deleteWebhook',
        tags,
        summary: 'Delete a registration (204; Alt: ?alt=1 answers 200 {success: true}); pending deliveries stop, history is kept for operators',
        security: [...SECURITY.mutate],
        params: ZWebhookIdParam,
        querystring: z.object({ alt: z.enum(['0', '1', 'true', 'false']).optional() }),
        response: { 204: z.null().describe('Deleted'), 200: z.object({ success: z.literal(true) }), ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['WEBHOOK_NOT_FOUND']) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => {
          await webhooks.remove(tx, requestContext(request), request.params.id);
          const alt = request.query.alt === '1' || request.query.alt === 'true';
          return alt ? { status: 200, body: { success: true } } : { status: 204, body: null };
        }),
    });

    r.post('/v1/webhooks/:id/test', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'sendWebhookTest',
        tags,
        summary: 'Send a test event (ping, an empty envelope) to this endpoint only; answers the queued delivery',
        description: `The body is {event: "ping", deliveredAt, envelope: {}}, signed and retried like any delivery. At most 20 test events and redeliveries per webhook per hour (WEBHOOK_MANUAL_LIMIT).`,
        security: [...SECURITY.mutate],
        params: ZWebhookIdParam,
        response: { 202: ZDelivery, ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['WEBHOOK_NOT_FOUND', 'WEBHOOK_DISABLED', 'WEBHOOK_MANUAL_LIMIT']) },
      },
      handler: (request, reply) => commitMutation(request, reply, async (tx) => ({ status: 202, body: await webhooks.sendTest(tx, requestContext(request), request.params.id) })),
    });

    r.post('/v1/webhooks/:id/deliveries/:deliveryId/redeliver', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'redeliverWebhookDelivery',
        tags,
        summary: "Send a finished delivery's payload again, as a new delivery whose redeliveryOf names the first",
        description: 'Only a delivery that succeeded or failed (a pending one is still being tried). Shares the cap of 20 test events and redeliveries per webhook per hour.',
        security: [...SECURITY.mutate],
        params: ZDeliveryParams,
        response: { 202: ZDelivery, ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['WEBHOOK_NOT_FOUND', 'DELIVERY_NOT_FOUND', 'DELIVERY_PENDING', 'WEBHOOK_DISABLED', 'WEBHOOK_MANUAL_LIMIT']) },
      },
      handler: (request, reply) =>
        commitMutation(request, reply, async (tx) => ({ status: 202, body: await webhooks.redeliver(tx, requestContext(request), request.params.id, request.params.deliveryId) })),
    });

    r.get('/v1/webhooks/:id/deliveries', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'listWebhookDeliveries',
        tags,
        summary: 'Delivery attempts of a registration, newest first',
        security: [...SECURITY.read],
        params: ZWebhookIdParam,
        querystring: ZPagingQuery.extend(ZDeliveriesQuery.shape),
        response: { 200: ZPage(ZDelivery), ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, ['WEBHOOK_NOT_FOUND']) },
      },
      handler: async (request) => {
        const paging = resolvePaging(request.query);
        const { rows, total } = await webhooks.deliveries(deps.db, requestContext(request), request.params.id, request.query.status, paging);
        return toPage(paging, rows, total);
      },
    });
  };
}
