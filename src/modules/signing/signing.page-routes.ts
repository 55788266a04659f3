import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../errors.js';
import { loadSigningAssets } from '../../web/signing/static-assets.js';
import type { PageLocaleOf } from './page-locale.repo.js';
import { renderInvalidLinkPage, renderSigningPage, SIGNING_ASSET_CSP, SIGNING_PAGE_CSP } from '../../web/signing/page.js';

/**
 * What a signing token may look like in a URL. Engines issue base64url tokens; anything else cannot be a
 * live link, and keeping to URL-safe characters lets the page use the token in relative URLs unescaped.
 */
const PAGE_TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The recipient signing page (GET /sign/:token) and its static files (GET /sign/assets/…): pdf.js from
 * our own node_modules and the client script, never a CDN. The JSON routes the page calls are in
 * signing.routes.ts.
 */
export function signingPageRoutes(deps: { pageLocale: PageLocaleOf }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const assets = loadSigningAssets();

    r.get(
      '/sign/:token',
      {
        schema: { hide: true, params: z.object({ token: z.string() }) },
        helmet: {
          contentSecurityPolicy: { useDefaults: false, directives: SIGNING_PAGE_CSP },
          // The token in the URL is the credential: never send it on in a Referer.
          referrerPolicy: { policy: 'no-referrer' },
          frameguard: { action: 'deny' },
        },
      },
      async (request, reply) => {
        const valid = PAGE_TOKEN.test(request.params.token);
        // The recipient's language, else their account's, else the browser's: a bad link's page too.
        const locale = await deps.pageLocale(valid ? request.params.token : null, request.headers['accept-language']);
        reply
          .code(valid ? 200 : 404)
          .type('text/html; charset=utf-8')
          .header('vary', 'accept-language')
          // A page holding someone's signing link must not sit in shared caches or search indexes.
          .header('cache-control', 'no-store')
          .header('x-robots-tag', 'noindex, nofollow');
        if (!valid) return reply.send(renderInvalidLinkPage(locale));
        return reply.send(renderSigningPage({ token: request.params.token, appPrefix: assets.appPrefix, pdfjsPrefix: assets.pdfjsPrefix, locale }));
      },
    );

    r.get(
      '/sign/assets/*',
      {
        schema: { hide: true },
        // Static, cached forever by browsers and cheap to serve; a page load fetches several at once.
        config: { rateLimit: false },
        helmet: { contentSecurityPolicy: { useDefaults: false, directives: SIGNING_ASSET_CSP } },
      },
      async (request, reply) => {
        const key = (request.params as { '*': string })['*'];
        const pending = assets.get(key);
        if (!pending) throw new AppError('NOT_FOUND', `No asset ${key}`);
        const asset = await pending;
        const gzip = asset.gzip && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));
        reply.type(asset.type).header('cache-control', IMMUTABLE).header('vary', 'accept-encoding');
        if (gzip) reply.header('content-encoding', 'gzip');
        return reply.send(gzip ? asset.gzip : asset.body);
      },
    );
  };
}
