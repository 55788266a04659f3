import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RequestContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { requestContext } from '../../http/auth.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import { renderEditorPage } from '../../web/editor/page.js';
import { signingPageCsp } from '../../web/signing/page.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';
import { ZEnvelopeIdParam } from '../envelopes/envelopes.schemas.js';
import type { PrepareLinks } from './prepare-links.service.js';
import { loadEditorAssets } from './editor-pages.routes.js';

const ZPrepareLink = z.object({
  url: z.string().describe('The editor for this draft; open it in a browser or a frame. It needs no other credential: treat it as a secret'),
  expiresAt: z.string().describe('When the link stops opening the editor (30 minutes); sending the envelope ends it too'),
});
const ZTokenParam = z.object({ token: z.string().max(128) });

/** The editor page's policy: framable by the account's allowed embedding origins only (PATCH /v1/account), else by nobody. */
const prepareCsp = (origins: string[]): string =>
  Object.entries(signingPageCsp(origins))
    .map(([k, v]) => `${k} ${v.join(' ')}`)
    .join('; ');

/**
 * POST /v1/envelopes/{id}/prepare-link (API key) mints the link; GET /prepare/{token} serves the field
 * editor for that draft, GET /prepare/{token}/document its PDF. The page saves through the /v1 field
 * routes and send with X-Prepare-Token (prepare-link-resolver.ts), so its rules are the API's own.
 */
export function prepareLinksRoutes(deps: { db: Db; links: PrepareLinks; envelopes: Pick<EnvelopesService, 'get' | 'openDownload'>; commitMutation: CommitMutation }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const assets = loadEditorAssets();

    r.post('/v1/envelopes/:id/prepare-link', {
      config: { auth: 'customer', idempotency: 'optional' },
      schema: {
        operationId: 'createPrepareLink',
        tags: ['Envelopes'],
        summary: 'A short-lived link to the field editor for one DRAFT, to open in your own app',
        description: 'The link opens the visual field editor for this draft only, with no other credential, for 30 minutes or until the envelope is sent. Its saves go through the field routes and send of this envelope and no other. Free.',
        security: [...SECURITY.mutate],
        params: ZEnvelopeIdParam,
        response: { 201: ZPrepareLink, ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['ENVELOPE_NOT_FOUND', 'ENVELOPE_NOT_DRAFT']) },
      },
      handler: (request, reply) => deps.commitMutation(request, reply, async (tx) => ({ status: 201, body: await deps.links.mint(tx, requestContext(request), request.params.id) })),
    });

    const contextOf = async (request: { id: string; ip: string }, token: string): Promise<{ ctx: RequestContext; envelopeId: string; allowedOrigins: string[] }> => {
      const link = await deps.links.resolve(deps.db, token);
      return { envelopeId: link.envelopeId, allowedOrigins: link.allowedOrigins, ctx: { actor: { customerId: link.customerId, mode: link.mode, via: 'prepare_link', keyId: null }, requestId: request.id, ip: request.ip, testModeHeader: false } };
    };
    // The CSP is set per request (its frame-ancestors are the account's), not by helmet's fixed one.
    // The token in the URL is the credential: never send it on in a Referer.
    const helmet = { contentSecurityPolicy: false, frameguard: false, referrerPolicy: { policy: 'no-referrer' as const } };

    r.get('/prepare/:token', { schema: { hide: true, params: ZTokenParam }, helmet }, async (request, reply) => {
      const { ctx, envelopeId, allowedOrigins } = await contextOf(request, request.params.token);
      const envelope = await deps.envelopes.get(deps.db, ctx, envelopeId);
      const id = encodeURIComponent(envelopeId);
      const base = `/prepare/${encodeURIComponent(request.params.token)}`;
      const html = renderEditorPage({
        state: { title: envelope.title, recipients: envelope.recipients.map(({ email, name, role }) => ({ email, name, role })), fields: envelope.fields },
        editorAssets: `/dashboard/editor/assets/${assets.own.prefix}`,
        signingAssets: assets.signingAssets,
        pdfjsAssets: assets.pdfjsAssets,
        urls: { document: `${base}/document`, fields: `/v1/envelopes/${id}/fields`, send: `/v1/envelopes/${id}/send`, done: '', back: '' },
        prepareToken: request.params.token,
      });
      return reply.type('text/html; charset=utf-8').header('content-security-policy', prepareCsp(allowedOrigins)).header('cache-control', 'no-store').header('x-robots-tag', 'noindex, nofollow').send(html);
    });

    r.get('/prepare/:token/document', { schema: { hide: true, params: ZTokenParam } }, async (request, reply) => {
      const { ctx, envelopeId } = await contextOf(request, request.params.token);
      const { stream, size } = await deps.envelopes.openDownload(deps.db, ctx, envelopeId, 'original');
      return reply.type('application/pdf').header('cache-control', 'no-store').header('content-length', size).send(stream);
    });
  };
}
