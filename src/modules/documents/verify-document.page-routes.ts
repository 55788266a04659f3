import type { FastifyInstance } from 'fastify';
import { AppError } from '../../errors.js';
import { LOCALES } from '../../i18n/locales.js';
import { pageLocale, PUBLIC_PAGE_HELMET } from '../../web/public-page.js';
import { loadVerifyDocumentAssets, renderVerifyDocumentPage } from '../../web/verify-document/page.js';

const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The public document verification page (DESIGN §5): GET /verify-document (HTML) and its static files.
 * The page holds no secret and shows nothing until a file is checked through POST /v1/documents/verify.
 */
export function verifyDocumentPageRoutes(deps: { maxPdfBytes: number }) {
  return async function (app: FastifyInstance): Promise<void> {
    const assets = loadVerifyDocumentAssets();
    // One page per language, rendered once: the visitor's is picked per request (?lang=, else Accept-Language).
    const html = new Map(LOCALES.map((locale) => [locale, renderVerifyDocumentPage({ assetPrefix: assets.prefix, maxBytes: deps.maxPdfBytes, locale })]));

    app.get('/verify-document', { schema: { hide: true }, helmet: PUBLIC_PAGE_HELMET }, async (request, reply) => {
      const locale = pageLocale(request.query, request.headers['accept-language']);
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').header('vary', 'accept-language').send(html.get(locale));
    });

    app.get('/verify-document/assets/*', { schema: { hide: true }, config: { rateLimit: false } }, async (request, reply) => {
      const key = (request.params as { '*': string })['*'];
      const asset = assets.get(key);
      if (!asset) throw new AppError('NOT_FOUND', `No asset ${key}`);
      return reply.type(asset.type).header('cache-control', IMMUTABLE).send(asset.body);
    });
  };
}
