import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Db } from '../../db/client.js';
import type { ApiKeyCache } from '../account/api-key-cache.js';
import type { OperatorContext } from '../../context.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { ZAddCredits, ZAuditQuery, ZCreateApiKey, ZCreateCustomer, ZIdParam, ZJobIdParam, ZKeyParam } from './ops.schemas.js';
import type { OpsService } from './ops.service.js';

/** The operator API: OPS_TOKEN bearer or a sibling product's X-S2S-Key. Not in the customer OpenAPI. */
export function opsRoutes(deps: { db: Db; ops: OpsService; commitMutation: CommitMutation; apiKeyCache: ApiKeyCache }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { auth: 'operator' as const };
    const op = (request: FastifyRequest): OperatorContext => request.operator!;
    const { ops, commitMutation } = deps;

    r.post('/ops/customers', { config, schema: { hide: true, body: ZCreateCustomer } }, (request, reply) =>
      commitMutation(request, reply, async (tx) => ({ status: 201, body: await ops.createCustomer(tx, op(request), request.body) })),
    );

    r.get('/ops/customers/:id', { config, schema: { hide: true, params: ZIdParam } }, (request) => ops.getCustomer(deps.db, request.params.id));

    // A grant retried after a lost answer must not credit twice: the key is reserved under the customer.
    r.post('/ops/customers/:id/credits', { config: { ...config, idempotency: 'required' }, schema: { hide: true, params: ZIdParam, body: ZAddCredits } }, (request, reply) =>
      commitMutation(request, reply, async (tx) => ({ status: 200, body: await ops.addCredits(tx, op(request), request.params.id, request.body) })),
    );

    r.post('/ops/customers/:id/api-keys', { config, schema: { hide: true, params: ZIdParam, body: ZCreateApiKey.optional() } }, (request, reply) =>
      commitMutation(request, reply, async (tx) => ({
        status: 201,
        body: await ops.createApiKey(tx, op(request), request.params.id, request.body?.mode ?? 'live'),
      })),
    );

    r.delete('/ops/customers/:id/api-keys/:keyId', { config, schema: { hide: true, params: ZKeyParam } }, (request, reply) =>
      commitMutation(request, reply, async (tx) => {
        const { keyHash, body } = await ops.revokeApiKey(tx, op(request), request.params.id, request.params.keyId);
        // Other nodes evict on the NOTIFY the revocation committed; this one at once.
        return { status: 200, body, afterCommit: () => deps.apiKeyCache.evict(keyHash) };
      }),
    );

    r.get('/ops/audit', { config, schema: { hide: true, querystring: ZPagingQuery.extend(ZAuditQuery.shape) } }, async (request) => {
      const paging = resolvePaging(request.query);
      const { rows, total } = await ops.listAudit(deps.db, { customerId: request.query.customerId }, paging);
      return toPage(paging, rows, total);
    });

    r.post('/ops/jobs/:id/retry', { config, schema: { hide: true, params: ZJobIdParam } }, (request, reply) =>
      commitMutation(request, reply, async (tx) => ({ status: 200, body: await ops.retryJob(tx, op(request), request.params.id) })),
    );

    r.get('/ops/alerts', { config, schema: { hide: true, querystring: ZPagingQuery } }, async (request) => {
      const paging = resolvePaging(request.query);
      const { rows, total } = await ops.listAlerts(deps.db, paging);
      return toPage(paging, rows, total);
    });
  };
}
