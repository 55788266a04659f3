import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requestContext } from '../../http/auth.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, INPUT_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { PageLocaleOf } from '../signing/page-locale.repo.js';
import { loadSigningAssets } from '../../web/signing/static-assets.js';
import { renderInvalidLinkPage, renderSigningPage, signingPageCsp } from '../../web/signing/page.js';
import { ZRecipientParam } from '../envelopes/envelopes.schemas.js';
import type { EmbedService } from './embed.service.js';

const ZEmbedLink = z
  .object({
    url: z.string().describe("The embed link: frame it (Signet.embed from /embed.js) on a page of one of the account's allowedOrigins. It opens once"),
    expiresAt: z.string().describe('Until when it can be opened (10 minutes); once opened, the page stays usable'),
    envelopeId: z.string(),
    recipientId: z.number().int().describe("The recipient's position (1, 2, …), as the page's events name it"),
  })
  .meta({ id: 'EmbedLink' });

const EMBED_JS = readFileSync(new URL('../../web/embed/assets/embed.js', import.meta.url));
const EMBED_JS_ETAG = `"${createHash('sha256').update(EMBED_JS).digest('hex').slice(0, 16)}"`;
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;
const COLOR = /^#[0-9a-f]{6}$/;

/** Embedded signing: the API route that mints links, the page they open, /embed.js, and each account's brand.css. */
export function embedRoutes(deps: { embed: EmbedService; commitMutation: CommitMutation; pageLocale: PageLocaleOf }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const assets = loadSigningAssets();

    r.post('/v1/envelopes/:id/recipients/:recipient/embed-link', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'createEmbedLink',
        tags: ['Envelopes'],
        summary: "A short-lived, single-use link to one recipient's signing page, for framing in your app",
        description:
          "The link opens the recipient's signing page inside an iframe on a page of one of the account's allowedOrigins (PATCH /v1/account); every other origin is refused framing by the browser. It can be opened once, within 10 minutes: mint a new one for each page view. The page posts signet:ready, signet:signed, signet:declined and signet:error to its parent (docs/embedding.md). The envelope must be sent and live (DRAFT: 409 INVALID_STATE; ended or expired: 410 ENVELOPE_NOT_ACTIVE) and the recipient must not have acted (409 ALREADY_ACTED). Free. Not available with the documenso engine (400 NOT_SUPPORTED_BY_ENGINE).",
        security: [...SECURITY.mutate],
        params: ZRecipientParam,
        response: {
          201: ZEmbedLink,
          ...errorResponses(CUSTOMER_ERRORS, INPUT_ERRORS, IDEMPOTENCY_ERRORS, ['ENVELOPE_NOT_FOUND', 'RECIPIENT_NOT_FOUND', 'INVALID_STATE', 'ENVELOPE_NOT_ACTIVE', 'ALREADY_ACTED', 'NOT_SUPPORTED_BY_ENGINE']),
        },
      },
      handler: (request, reply) =>
        deps.commitMutation(request, reply, async (tx) => ({ status: 201, body: await deps.embed.mint(tx, requestContext(request), request.params.id, request.params.recipient) })),
    });

    // The CSP is set here, per request (its frame-ancestors are the account's), not by helmet's fixed one.
    r.get('/sign/embed/:token', { schema: { hide: true, params: z.object({ token: z.string() }) }, helmet: { contentSecurityPolicy: false, frameguard: false, referrerPolicy: { policy: 'no-referrer' } } }, async (request, reply) => {
      const opened = TOKEN.test(request.params.token) ? await deps.embed.open(request.params.token) : undefined;
      const csp = signingPageCsp(opened?.allowedOrigins ?? []);
      const locale = await deps.pageLocale(opened?.signingToken ?? null, request.headers['accept-language']);
      reply
        .code(opened ? 200 : 404)
        .type('text/html; charset=utf-8')
        .header('vary', 'accept-language')
        .header('content-security-policy', Object.entries(csp).map(([k, v]) => `${k} ${v.join(' ')}`).join('; '))
        .header('cache-control', 'no-store')
        .header('x-robots-tag', 'noindex, nofollow');
      if (!opened) return reply.header('x-frame-options', 'DENY').send(renderInvalidLinkPage(locale));
      const embed = { origins: opened.allowedOrigins, envelopeId: opened.envelopeId, recipientId: opened.recipientId };
      return reply.send(renderSigningPage({ token: opened.signingToken, appPrefix: assets.appPrefix, pdfjsPrefix: assets.pdfjsPrefix, root: '../', embed, locale }));
    });

    // A custom property, not inline style (the CSP forbids that): signing.css reads --accent.
    r.get('/sign/:token/brand.css', { schema: { hide: true, params: z.object({ token: z.string().max(128) }) }, config: { rateLimit: false } }, async (request, reply) => {
      const color = TOKEN.test(request.params.token) ? await deps.embed.brandColorOf(sha256Hex(request.params.token)) : null;
      reply.type('text/css; charset=utf-8').header('cache-control', 'private, max-age=300');
      return reply.send(color && COLOR.test(color) ? `:root { --accent: ${color}; }\n` : '/* Signet default */\n');
    });

    r.get('/embed.js', { schema: { hide: true }, config: { rateLimit: false } }, async (request, reply) => {
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').header('etag', EMBED_JS_ETAG).header('access-control-allow-origin', '*').header('cross-origin-resource-policy', 'cross-origin');
      if (request.headers['if-none-match'] === EMBED_JS_ETAG) return reply.code(304).send();
      return reply.send(EMBED_JS);
    });
  };
}
