import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import type { RefundsService } from '../billing/refunds.service.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';

const ZId = z.object({ id: z.uuid() });

/** Operator routes over envelopes and refunds (same auth as the rest of /ops). */
export function opsEnvelopeRoutes(deps: { db: Db; envelopes: EnvelopesService; refunds: RefundsService; commitMutation: CommitMutation }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { auth: 'operator' as const };

    r.post('/ops/envelopes/:id/cancel', { config, schema: { hide: true, params: ZId } }, (request, reply) =>
      deps.commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.envelopes.cancelAsOperator(tx, request.operator!, request.params.id) })),
    );

    r.get('/ops/refunds', { config, schema: { hide: true, querystring: ZPagingQuery.extend({ status: z.enum(['pending', 'succeeded', 'failed', 'completed']).optional() }) } }, async (request) => {
      const paging = resolvePaging(request.query);
      const { rows, total } = await deps.refunds.list(deps.db, request.query.status, paging);
      return toPage(paging, rows, total);
    });

    // A wallet (x402) refund was sent on-chain by the operator: record its hash. Signet sends nothing itself.
    r.post('/ops/refunds/:id/complete', { config, schema: { hide: true, params: ZId, body: z.object({ txHash: z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'a transaction hash: 0x and 64 hex digits') }) } }, (request, reply) =>
      deps.commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.refunds.completeWallet(tx, request.operator!, request.params.id, request.body.txHash.toLowerCase()) })),
    );

    r.post('/ops/refunds/:id/retry', { config, schema: { hide: true, params: ZId } }, (request, reply) =>
      deps.commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.refunds.retry(tx, request.operator!, request.params.id) })),
    );
  };
}
