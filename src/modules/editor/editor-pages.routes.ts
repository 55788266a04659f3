import { fileURLToPath } from 'node:url';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { EDITOR_PAGE_CSP, renderEditorPage } from '../../web/editor/page.js';
import { loadSigningAssets } from '../../web/signing/static-assets.js';
import { loadPageAssets } from '../../web/static-assets.js';
import { sessionContext } from '../dashboard/dashboard-http.js';
import type { DashboardSection } from '../dashboard/dashboard.routes.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';
import type { TemplatesService } from '../templates/templates.service.js';
import { templateListPage } from '../../web/dashboard/templates.js';
import { ZPageNumber } from '../dashboard/page-query.js';

const ZIdParam = z.object({ id: z.string() });
const TEMPLATES_PER_PAGE = 20;

/** The editor's own files; pdf.js and the page renderer are the signing page's, served under /sign/assets. */
export function loadEditorAssets() {
  const own = loadPageAssets(fileURLToPath(new URL('../../web/editor/assets/', import.meta.url)));
  const signing = loadSigningAssets();
  return { own, signingAssets: `/sign/assets/${signing.appPrefix}`, pdfjsAssets: `/sign/assets/${signing.pdfjsPrefix}` };
}

/**
 * GET /dashboard/envelopes/:id/prepare: the field editor on a live-mode DRAFT, saving through the /v1 field
 * routes with the session cookie and X-CSRF-Token; GET …/prepare/document: the draft's PDF for it.
 * Reads go through the envelope service, so another customer's draft is the API's own 404.
 * GET /dashboard/templates, …/templates/:id/prepare and …/prepare/document: the same for templates.
 */
export function editorPagesSection(deps: { db: Db; envelopes: Pick<EnvelopesService, 'get' | 'openDownload'>; templates: Pick<TemplatesService, 'list' | 'get' | 'document'> }): DashboardSection {
  return (kit) => async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const assets = loadEditorAssets();
    const config = { dashboard: 'session' as const };
    const helmet = { contentSecurityPolicy: { useDefaults: false, directives: EDITOR_PAGE_CSP }, frameguard: { action: 'deny' as const } };

    r.get('/dashboard/editor/assets/*', { config: { rateLimit: false } }, async (request, reply) => {
      const asset = assets.own.get((request.params as { '*': string })['*']);
      if (!asset) throw new AppError('NOT_FOUND', 'No such file');
      return reply.type(asset.type).header('cache-control', 'public, max-age=31536000, immutable').send(asset.body);
    });

    r.get('/dashboard/envelopes/:id/prepare', { config, helmet, schema: { params: ZIdParam } }, async (request, reply) => {
      const envelope = await deps.envelopes.get(deps.db, sessionContext(request), request.params.id);
      const id = encodeURIComponent(envelope.envelopeId);
      if (envelope.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', `This envelope is ${envelope.status}: its fields can no longer change`);
      const html = renderEditorPage({
        state: { title: envelope.title, recipients: envelope.recipients.map(({ email, name, role }) => ({ email, name, role })), fields: envelope.fields },
        editorAssets: `/dashboard/editor/assets/${assets.own.prefix}`,
        signingAssets: assets.signingAssets,
        pdfjsAssets: assets.pdfjsAssets,
        urls: { document: `/dashboard/envelopes/${id}/prepare/document`, fields: `/v1/envelopes/${id}/fields`, send: `/v1/envelopes/${id}/send`, done: `/dashboard/envelopes/${id}`, back: `/dashboard/envelopes/${id}` },
        csrf: kit.csrf.tokenFor(request, reply),
      });
      return reply.type('text/html; charset=utf-8').send(html);
    });

    r.get('/dashboard/envelopes/:id/prepare/document', { config, schema: { params: ZIdParam } }, async (request, reply) => {
      // On the pool, not in a transaction: the PDF streams from the store as the browser reads it (DESIGN §4.13).
      const { stream, size } = await deps.envelopes.openDownload(deps.db, sessionContext(request), request.params.id, 'original');
      return reply.type('application/pdf').header('content-length', size).send(stream);
    });

    // Templates: the same editor, assigning fields to recipient slots and saving through /v1/templates/{id}/fields.
    // Live mode only, as the cookie-authenticated field routes act on live data.
    r.get('/dashboard/templates', { config, schema: { querystring: z.object({ page: ZPageNumber }) } }, async (request, reply) => {
      const { page } = request.query;
      const { rows, total } = await deps.templates.list(deps.db, sessionContext(request), { style: 'offset', limit: TEMPLATES_PER_PAGE, offset: (page - 1) * TEMPLATES_PER_PAGE });
      const body = templateListPage({ page, perPage: TEMPLATES_PER_PAGE, total, rows });
      return kit.render(request, reply, { title: 'Templates', active: 'templates', body });
    });

    r.get('/dashboard/templates/:id/prepare', { config, helmet, schema: { params: ZIdParam } }, async (request, reply) => {
      const template = await deps.templates.get(deps.db, sessionContext(request), request.params.id);
      const id = encodeURIComponent(template.templateId);
      const html = renderEditorPage({
        kind: 'template',
        state: { title: template.title, recipients: template.recipients.map(({ email, name, role }) => ({ email, name, role })), fields: template.fields },
        editorAssets: `/dashboard/editor/assets/${assets.own.prefix}`,
        signingAssets: assets.signingAssets,
        pdfjsAssets: assets.pdfjsAssets,
        urls: { document: `/dashboard/templates/${id}/prepare/document`, fields: `/v1/templates/${id}/fields`, done: '/dashboard/templates', back: '/dashboard/templates' },
        csrf: kit.csrf.tokenFor(request, reply),
      });
      return reply.type('text/html; charset=utf-8').send(html);
    });

    r.get('/dashboard/templates/:id/prepare/document', { config, schema: { params: ZIdParam } }, async (request, reply) => {
      const bytes = await deps.templates.document(deps.db, sessionContext(request), request.params.id);
      return reply.type('application/pdf').send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    });
  };
}
