import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { ENVELOPE_STATUSES } from '../../engine/engine.js';
import { DONE_NOTICES } from '../../web/dashboard/envelope-actions.js';
import { envelopeDetailPage, envelopeListPage } from '../../web/dashboard/envelopes.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';
import { sessionContext } from './dashboard-http.js';
import type { DashboardSection } from './dashboard.routes.js';
import type { ApiKeysService } from '../account/api-keys.service.js';
import { ZModeAsked, ZModeQuery, ZPageNumber, onlyTestKeys, withTestFallback } from './page-query.js';

const PER_PAGE = 20;

const ZListQuery = z.object({ mode: ZModeAsked, status: z.enum(ENVELOPE_STATUSES).optional().catch(undefined), page: ZPageNumber });
const ZIdParam = z.object({ id: z.string() });
// After an action (envelope-actions.routes.ts): which notice to show; `who` is matched against the recipients, never echoed.
const ZDetailQuery = ZModeQuery.extend({ done: z.enum(Object.keys(DONE_NOTICES) as [keyof typeof DONE_NOTICES]).optional().catch(undefined), who: z.string().max(320).optional().catch(undefined) });

/**
 * GET /dashboard/envelopes (status filter, paging, ?mode=test), GET /dashboard/envelopes/:id (recipients
 * and events), GET /dashboard/envelopes/:id/download (the sealed PDF once COMPLETED). Reads go through
 * the envelope service, so ownership and the 404 for anyone else's envelope are the API's own.
 */
export function envelopePagesSection(deps: { db: Db; envelopes: Pick<EnvelopesService, 'list' | 'get' | 'openDownload'>; apiKeys: Pick<ApiKeysService, 'list'> }): DashboardSection {
  return (kit) => async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { dashboard: 'session' as const };

    r.get('/dashboard/envelopes', { config, schema: { querystring: ZListQuery } }, async (request, reply) => {
      const { status, page } = request.query;
      const offset = (page - 1) * PER_PAGE;
      const load = (mode: 'live' | 'test') => deps.envelopes.list(deps.db, sessionContext(request, mode), { status }, { style: 'offset', limit: PER_PAGE, offset });
      // A filtered or later page is a question about one side: only the plain first page falls back to test data.
      const asked = request.query.mode ?? (status || page > 1 ? 'live' : undefined);
      const keys = asked ? [] : await deps.apiKeys.list(deps.db, sessionContext(request).actor);
      const { mode, testFallback, result } = await withTestFallback(asked, load, { onlyTestKeys: onlyTestKeys(keys) });
      // The switch counts every envelope of each side, whatever the filter.
      const totalOf = async (m: 'live' | 'test') => (await deps.envelopes.list(deps.db, sessionContext(request, m), {}, { style: 'offset', limit: 1, offset: 0 })).total;
      const counts = { live: await totalOf('live'), test: await totalOf('test') };
      const body = envelopeListPage({ mode, testFallback, counts, status, statuses: ENVELOPE_STATUSES, page, perPage: PER_PAGE, total: result.total, rows: result.rows });
      return kit.render(request, reply, { title: 'Envelopes', active: 'envelopes', body });
    });

    r.get('/dashboard/envelopes/:id', { config, schema: { params: ZIdParam, querystring: ZDetailQuery } }, async (request, reply) => {
      const { mode, done, who } = request.query;
      const envelope = await deps.envelopes.get(deps.db, sessionContext(request, mode), request.params.id);
      const named = who && envelope.recipients.find((x) => x.email.toLowerCase() === who.toLowerCase());
      const flash = done && { kind: 'ok' as const, text: named ? `${DONE_NOTICES[done]} (${named.name}, ${named.email})` : DONE_NOTICES[done] };
      const body = envelopeDetailPage(envelope, mode, { csrf: kit.csrf.tokenFor(request, reply) });
      return kit.render(request, reply, { title: envelope.title ?? 'Untitled envelope', active: 'envelopes', body, flash: flash || undefined });
    });

    r.get('/dashboard/envelopes/:id/download', { config, schema: { params: ZIdParam, querystring: ZModeQuery } }, async (request, reply) => {
      const ctx = sessionContext(request, request.query.mode);
      // On the pool, not in a transaction: the PDF streams from the store as the browser reads it (DESIGN §4.13).
      const { stream, size, filename } = await deps.envelopes.openDownload(deps.db, ctx, request.params.id, 'signed');
      return reply.type('application/pdf').header('content-disposition', `attachment; filename="${filename}"`).header('content-length', size).send(stream);
    });
  };
}
