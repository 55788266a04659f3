import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../errors.js';
import { PUBLIC_PAGE_HELMET } from '../../web/public-page.js';
import { DOCS_PAGE_HELMET, HOME_LINKS, loadDocsAssets, loadReferenceAssets, renderGuidePage, renderGuidesIndex, renderHomePage, renderReferencePage } from '../../web/docs/pages.js';
import type { Guides } from '../../web/docs/guides.js';
import type { PageAssets } from '../../web/static-assets.js';

const IMMUTABLE = 'public, max-age=31536000, immutable';
/** An image from docs/ may be an SVG: opened on its own it must not run script. */
const IMAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox";

/** True when the caller asked for JSON rather than a page (an API client's `Accept: application/json`). */
function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return /application\/json/.test(accept) && !/text\/html/.test(accept);
}

function serveAsset(assets: PageAssets) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const key = (request.params as { '*': string })['*'];
    const asset = assets.get(key);
    if (!asset) throw new AppError('NOT_FOUND', `No asset ${key}`);
    return reply.type(asset.type).header('cache-control', IMMUTABLE).send(asset.body);
  };
}

const html = (reply: FastifyReply, body: string) => reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(body);

/**
 * GET / (what this server is, with links), GET /docs (the API reference: Swagger UI over /openapi.json,
 * served from node_modules, never a CDN) and GET /docs/guides/… (docs/*.md, rendered once, with the
 * first request for a guide: most servers never serve one, and marked and the rendered pages would be
 * held from start; docs/operating.md: Memory).
 */
export function docsRoutes(deps: { version: string; publicUrl: string }) {
  return async function (app: FastifyInstance): Promise<void> {
    const assets = loadDocsAssets();
    const reference = loadReferenceAssets();
    const home = renderHomePage({ prefix: assets.prefix, version: deps.version });
    const referencePage = renderReferencePage({ prefix: reference.prefix });
    let site: Promise<{ guides: Guides; index: string; pages: Map<string, string> }> | undefined;
    const guidesSite = () =>
      (site ??= import('../../web/docs/guides.js').then(({ loadGuides }) => {
        const guides = loadGuides();
        const index = renderGuidesIndex({ prefix: assets.prefix, guides: guides.list });
        const pages = new Map(guides.list.map((g) => [g.name, renderGuidePage({ prefix: assets.prefix, guide: g, guides: guides.list })]));
        return { guides, index, pages };
      }));
    const base = deps.publicUrl.replace(/\/$/, '');
    const homeJson = {
      name: 'Signet',
      version: deps.version,
      links: { ...Object.fromEntries(HOME_LINKS.map((l) => [l.href.replace('docs/guides', 'guides'), `${base}/${l.href}`])), openapi: `${base}/openapi.json` },
    };
    const hidden = { schema: { hide: true } };

    app.get('/', { ...hidden, helmet: PUBLIC_PAGE_HELMET }, async (request, reply) => {
      reply.header('vary', 'accept');
      return wantsJson(request) ? reply.header('cache-control', 'no-cache').send(homeJson) : html(reply, home);
    });
    app.get('/docs', { ...hidden, helmet: DOCS_PAGE_HELMET }, async (_request, reply) => html(reply, referencePage));
    app.get('/docs/guides', { ...hidden, helmet: PUBLIC_PAGE_HELMET }, async (_request, reply) => html(reply, (await guidesSite()).index));
    app.get('/docs/guides/:name', { ...hidden, helmet: PUBLIC_PAGE_HELMET }, async (request, reply) => {
      const { name } = request.params as { name: string };
      const page = (await guidesSite()).pages.get(name.replace(/\.md$/, ''));
      if (!page) throw new AppError('NOT_FOUND', `No guide ${name}`);
      return html(reply, page);
    });
    app.get('/docs/guides/files/*', { ...hidden, config: { rateLimit: false } }, async (request, reply) => {
      const file = (await guidesSite()).guides.file((request.params as { '*': string })['*']);
      if (!file) throw new AppError('NOT_FOUND', 'No such file in docs/');
      return reply.type(file.type).header('cache-control', 'public, max-age=3600').header('content-security-policy', IMAGE_CSP).send(file.body);
    });
    app.get('/docs/assets/*', { ...hidden, config: { rateLimit: false } }, serveAsset(assets));
    app.get('/docs/reference/*', { ...hidden, config: { rateLimit: false } }, serveAsset(reference));
  };
}
