import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import type { EnvelopesRepo } from '../envelopes/envelopes.repo.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';

const ZId = z.object({ id: z.uuid() });

/** Operator routes over envelopes and refunds (same auth as the rest of /ops). */
export function opsEnvelopeRoutes(deps: { db: Db; envelopes: EnvelopesService; repo: EnvelopesRepo; commitMutation: CommitMutation }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { auth: 'operator' as const };

    r.post('/ops/envelopes/:id/cancel', { config, schema: { hide: true, params: ZId } }, (request, reply) =>
      deps.commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.envelopes.cancelAsOperator(tx, request.operator!, request.params.id) })),
    );

    r.get('/ops/refunds', { config, schema: { hide: true, querystring: ZPagingQuery.extend({ status: z.enum(['pending', 'succeeded', 'failed']).optional() }) } }, async (request) => {
      const paging = resolvePaging(request.query);
      const { rows, total } = await deps.repo.listRefunds(deps.db, request.query.status, paging);
      const data = rows.map((x) => ({ ...x, amountMicros: Number(x.amountMicros), createdAt: x.createdAt.toISOString(), updatedAt: x.updatedAt.toISOString() }));
      return toPage(paging, data, total);
    });

    r.post('/ops/refunds/:id/retry', { config, schema: { hide: true, params: ZId } }, (request, reply) =>
      deps.commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.envelopes.retryRefund(tx, request.operator!, request.params.id) })),
    );
  };
}
