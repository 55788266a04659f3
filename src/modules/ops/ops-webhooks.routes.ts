import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import { ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { deliveryDto, webhookDto } from '../webhooks/webhooks.service.js';
import type { WebhooksRepo } from '../webhooks/webhooks.repo.js';

/** Operators read a registration and its delivery history, deleted registrations included. */
export function opsWebhookRoutes(deps: { db: Db; repo: WebhooksRepo }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { auth: 'operator' as const };
    const params = z.object({ id: z.uuid() });

    r.get('/ops/webhooks/:id', { config, schema: { hide: true, params } }, async (request) => {
      const w = await deps.repo.findById(deps.db, request.params.id);
      if (!w) throw new AppError('WEBHOOK_NOT_FOUND', 'No such webhook');
      return { ...webhookDto(w), customerId: w.customerId, mode: w.mode, deletedAt: w.deletedAt?.toISOString() ?? null };
    });

    r.get(
      '/ops/webhooks/:id/deliveries',
      { config, schema: { hide: true, params, querystring: ZPagingQuery.extend({ status: z.enum(['PENDING', 'SUCCESS', 'FAILED']).optional() }) } },
      async (request) => {
        const w = await deps.repo.findById(deps.db, request.params.id);
        if (!w) throw new AppError('WEBHOOK_NOT_FOUND', 'No such webhook');
        const paging = resolvePaging(request.query);
        const { rows, total } = await deps.repo.deliveries(deps.db, w.id, request.query.status, paging);
        return toPage(paging, rows.map(deliveryDto), total);
      },
    );
  };
}
