import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import type { OperatorContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { pageLocale, PUBLIC_PAGE_HELMET } from '../../web/public-page.js';
import { loadVerifyAssets, renderInvalidVerifyLinkPage, renderVerifyPage, type VerifyPageState } from '../../web/verify/page.js';
import { ZConfirmBody, ZVerifyToken } from './verifications.schemas.js';
import type { VerificationsService } from './verifications.service.js';

/** What a token may look like in a URL; anything else cannot be a live link (and stays safe in relative URLs). */
const PAGE_TOKEN = /^[A-Za-z0-9_-]{16,128}$/;
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The person acting on a link is no customer: their actions are audited as the system, with their request. */
const visitor = (request: FastifyRequest): OperatorContext => ({ actorType: 'system', requestId: request.id, ip: request.ip });

/**
 * The identity verification page (DESIGN §5): GET /verify/:token (HTML), its two JSON routes and its
 * static files. The token in the link is the credential; nothing here is in the customer OpenAPI.
 */
export function verifyPageRoutes(deps: { db: Db; verifications: VerificationsService }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const assets = loadVerifyAssets();

    r.get('/verify/:token', { schema: { hide: true, params: z.object({ token: z.string() }) }, helmet: PUBLIC_PAGE_HELMET }, async (request, reply) => {
      // A page holding someone's verification link must not sit in shared caches or search indexes.
      reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').header('x-robots-tag', 'noindex, nofollow').header('vary', 'accept-language');
      const { token } = request.params;
      // In the visitor's language: ?lang= (the page's switch), else the browser's.
      const locale = pageLocale(request.query, request.headers['accept-language']);
      const view = PAGE_TOKEN.test(token) ? await deps.verifications.pageView(deps.db, token) : undefined;
      if (!view) return reply.code(404).send(renderInvalidVerifyLinkPage(assets.prefix, locale));
      const state: VerifyPageState = view.status === 'pending' ? (view.codeLive ? 'enter' : 'ask') : view.status;
      return reply.send(renderVerifyPage({ token, assetPrefix: assets.prefix, state, sentTo: view.sentTo, name: view.name, attemptsLeft: view.attemptsLeft, redirectUrl: view.redirectUrl, locale }));
    });

    r.post('/verify/:token/code', { schema: { hide: true, params: ZVerifyToken } }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return deps.verifications.pageRequestCode(request.params.token, visitor(request));
    });

    r.post('/verify/:token/confirm', { schema: { hide: true, params: ZVerifyToken, body: ZConfirmBody } }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return deps.verifications.pageConfirm(request.params.token, request.body.code, visitor(request));
    });

    r.get('/verify/assets/*', { schema: { hide: true }, config: { rateLimit: false } }, async (request, reply) => {
      const key = (request.params as { '*': string })['*'];
      const asset = assets.get(key);
      if (!asset) throw new AppError('NOT_FOUND', `No asset ${key}`);
      return reply.type(asset.type).header('cache-control', IMMUTABLE).send(asset.body);
    });
  };
}
