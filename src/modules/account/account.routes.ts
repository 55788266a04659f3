import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { requestContext } from '../../http/auth.js';
import { ZPage, ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, INPUT_ERRORS, JSON_BODY_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import type { CommitMutation } from '../../http/idempotency.js';
import type { Db } from '../../db/client.js';
import { ZAccount, ZAccountSettingsPatch, ZAccountSummary, ZProductEnrollment, ZProductList, ZProductParam, ZUsageEntry } from './account.schemas.js';
import type { AccountService } from './account.service.js';
import type { ProductsService } from './products.service.js';
import type { SummaryService } from './summary.service.js';

/** A wallet JWT only. */
const WALLET_ONLY = [{ walletJwt: [] }];
/** SPEC.md: enabling a product is the account holder's act, by wallet JWT or the dashboard session. */
const HOLDER_ONLY: Record<string, string[]>[] = [{ walletJwt: [] }, { sessionCookie: [] }];
/**
 * The settings body is a few short fields and one text of at most 5,000 characters (each up to 6 bytes
 * as a JSON escape): anything bigger is refused unread, since a free test key may send it.
 */
export const ACCOUNT_SETTINGS_BODY_LIMIT = 64 * 1024;

export function accountRoutes(deps: { db: Db; account: AccountService; summary: SummaryService; products: ProductsService; commitMutation: CommitMutation }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.get('/v1/account', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getAccount',
        tags: ['Account'],
        summary: 'The account behind the credential: identity, prepaid balance and sandbox counters; for a wallet, its address and total spending',
        security: [...SECURITY.read],
        response: { 200: ZAccount, ...errorResponses(CUSTOMER_ERRORS) },
      },
      handler: async (request) => deps.account.getAccount(deps.db, requestContext(request).actor),
    });

    r.patch('/v1/account', {
      config: { auth: 'customer', idempotency: 'optional', sessionCookie: true },
      bodyLimit: ACCOUNT_SETTINGS_BODY_LIMIT,
      schema: {
        operationId: 'updateAccount',
        tags: ['Account'],
        summary: "Change the account's settings: the display name recipients see, where the sender's notices go whether they are sent, the consent text recipients agree to and the recipients' default language",
        description:
          'Only the fields given change; null resets notificationEmail, consentText and defaultLocale to their defaults. An unsupported defaultLocale is a VALIDATION_ERROR naming the supported ones. Any credential of the account may call it, a test key too (settings are not billable); the dashboard session sends X-CSRF-Token. The body is at most 64 KiB. Answers the account as GET /v1/account does.',
        security: [...SECURITY.read, { sessionCookie: [] }],
        body: ZAccountSettingsPatch,
        response: {
          200: ZAccount,
          ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, IDEMPOTENCY_ERRORS, JSON_BODY_ERRORS, ['CSRF_TOKEN_INVALID', 'X402_NOT_APPLICABLE']),
        },
      },
      handler: async (request, reply) =>
        deps.commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.account.updateSettings(tx, requestContext(request), request.body) })),
    });

    r.get('/v1/account/usage', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'listUsage',
        tags: ['Account'],
        summary: 'Ledger entries (debits, credits, refunds, reversals), most recent first',
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

    r.get('/v1/account/summary', {
      config: { auth: 'customer' },
      schema: {
        operationId: 'getAccountSummary',
        tags: ['Account'],
        summary: 'Wallet callers: envelope counts, spending by day and month, and the pending envelopes',
        security: WALLET_ONLY,
        response: { 200: ZAccountSummary, ...errorResponses(CUSTOMER_ERRORS, ['WALLET_JWT_REQUIRED']) },
      },
      handler: async (request) => deps.summary.getSummary(deps.db, requestContext(request).actor),
    });

    r.get('/v1/account/products', {
      config: { auth: 'customer', noCredentialCode: 'MISSING_AUTH', sessionCookie: true },
      schema: {
        operationId: 'listAccountProducts',
        tags: ['Account'],
        summary: 'The products this account has enabled (may be empty)',
        security: [...SECURITY.read, { sessionCookie: [] }],
        response: { 200: ZProductList, ...errorResponses(CUSTOMER_ERRORS, ['MISSING_AUTH', 'X402_NOT_APPLICABLE']) },
      },
      handler: async (request) => ({ data: await deps.products.list(deps.db, requestContext(request).actor) }),
    });

    r.post('/v1/account/products/:product/enable', {
      config: { auth: 'customer', idempotency: 'optional', sessionCookie: true },
      schema: {
        operationId: 'enableAccountProduct',
        tags: ['Account'],
        summary: 'Enable a product for the account (wallet JWT or dashboard session); idempotent, the same body every time',
        security: HOLDER_ONLY,
        params: ZProductParam,
        response: { 200: ZProductEnrollment, ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, IDEMPOTENCY_ERRORS, ['FORBIDDEN', 'CSRF_TOKEN_INVALID', 'X402_NOT_APPLICABLE', 'PRODUCT_NOT_FOUND']) },
      },
      handler: async (request, reply) =>
        deps.commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.products.enable(tx, requestContext(request), request.params.product) })),
    });
  };
}
