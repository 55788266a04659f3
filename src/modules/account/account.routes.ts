import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { requestContext } from '../../http/auth.js';
import { ZPage, ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { CUSTOMER_ERRORS, INPUT_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import type { Db } from '../../db/client.js';
import { ZAccount, ZUsageEntry } from './account.schemas.js';
import type { AccountService } from './account.service.js';

export function accountRoutes(deps: { db: Db; account: AccountService }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get('/v1/account', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getAccount',
        tags: ['Account'],
        summary: 'The account behind the credential: identity, prepaid balance and sandbox counters',
        security: [...SECURITY.read],
        response: { 200: ZAccount, ...errorResponses(CUSTOMER_ERRORS) },
      },
      handler: async (request) => deps.account.getAccount(deps.db, requestContext(request).actor),
    });

    r.get('/v1/account/usage', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'listUsage',
        tags: ['Account'],
        summary: 'Ledger entries (debits, credits, refunds), most recent first',
        security: [...SECURITY.read],
        querystring: ZPagingQuery,
        response: { 200: ZPage(ZUsageEntry), ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS) },
      },
      handler: async (request) => {
        const paging = resolvePaging(request.query);
        const { rows, total } = await deps.account.listUsage(deps.db, requestContext(request).actor, paging);
        return toPage(paging, rows, total);
      },
    });
  };
}
