import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import type { WebhooksService } from '../webhooks/webhooks.service.js';

/** Operators read a registration and its delivery history, deleted registrations included. */
export function opsWebhookRoutes(deps: { db: Db; webhooks: WebhooksService }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { auth: 'operator' as const };
    const params = z.object({ id: z.uuid() });

    r.get('/ops/webhooks/:id', { config, schema: { hide: true, params } }, (request) => deps.webhooks.getAsOperator(deps.db, request.params.id));

    r.get(
      '/ops/webhooks/:id/deliveries',
      { config, schema: { hide: true, params, querystring: ZPagingQuery.extend({ status: z.enum(['PENDING', 'SUCCESS', 'FAILED']).optional() }) } },
      async (request) => {
        const paging = resolvePaging(request.query);
        const { rows, total } = await deps.webhooks.deliveriesAsOperator(deps.db, request.params.id, request.query.status, paging);
        return toPage(paging, rows, total);
      },
    );
  };
}
