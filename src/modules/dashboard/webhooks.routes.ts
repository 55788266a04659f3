import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Db } from '../../db/client.js';
import { webhooksPage } from '../../web/dashboard/webhooks.js';
import type { WebhooksService } from '../webhooks/webhooks.service.js';
import { sessionContext } from './dashboard-http.js';
import type { DashboardSection } from './dashboard.routes.js';
import { ZModeAskedQuery, withTestFallback } from './page-query.js';

/** Registrations shown; the API's own cap on a list page, more than anyone registers. */
const MAX_WEBHOOKS = 100;
const RECENT_DELIVERIES = 10;

/** GET /dashboard/webhooks: every registration of the mode with its last deliveries, through the webhooks service. */
export function webhookPagesSection(deps: { db: Db; webhooks: Pick<WebhooksService, 'list' | 'deliveries'>; publicUrl: string }): DashboardSection {
  return (kit) => async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.get('/dashboard/webhooks', { config: { dashboard: 'session' }, schema: { querystring: ZModeAskedQuery } }, async (request, reply) => {
      const { mode, testFallback, result } = await withTestFallback(request.query.mode, (m) => deps.webhooks.list(deps.db, sessionContext(request, m), { style: 'offset', limit: MAX_WEBHOOKS, offset: 0 }));
      const ctx = sessionContext(request, mode);
      const { rows } = result;
      const webhooks = await Promise.all(
        rows.map(async (w) => {
          const d = await deps.webhooks.deliveries(deps.db, ctx, w.id, undefined, { style: 'offset', limit: RECENT_DELIVERIES, offset: 0 });
          return { ...w, deliveries: d.rows, totalDeliveries: d.total };
        }),
      );
      return kit.render(request, reply, { title: 'Webhooks', active: 'webhooks', body: webhooksPage({ mode, testFallback, publicUrl: deps.publicUrl, webhooks }) });
    });
  };
}
