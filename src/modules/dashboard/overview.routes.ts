import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Db } from '../../db/client.js';
import { overviewPage } from '../../web/dashboard/overview.js';
import type { AccountService } from '../account/account.service.js';
import type { ApiKeysService } from '../account/api-keys.service.js';
import type { SummaryService } from '../account/summary.service.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';
import { sessionContext } from './dashboard-http.js';
import type { DashboardSection } from './dashboard.routes.js';
import { ZModeQuery } from './page-query.js';

const RECENT = 5;

/** GET /dashboard: the account at a glance. Balance and test sends are the account's; envelopes follow ?mode. */
export function overviewSection(deps: {
  db: Db;
  account: Pick<AccountService, 'getAccount'>;
  summary: Pick<SummaryService, 'dailySpending'>;
  apiKeys: Pick<ApiKeysService, 'list'>;
  envelopes: Pick<EnvelopesService, 'list'>;
  publicUrl: string;
}): DashboardSection {
  return (kit) => async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    r.get('/dashboard', { config: { dashboard: 'session' }, schema: { querystring: ZModeQuery } }, async (request, reply) => {
      const { mode } = request.query;
      const ctx = sessionContext(request, mode);
      const [account, spending, keys, recent] = await Promise.all([
        deps.account.getAccount(deps.db, ctx.actor),
        deps.summary.dailySpending(deps.db, ctx.actor.customerId, 30),
        deps.apiKeys.list(deps.db, ctx.actor),
        deps.envelopes.list(deps.db, ctx, {}, { style: 'offset', limit: RECENT, offset: 0 }),
      ]);
      const body = overviewPage({ mode, publicUrl: deps.publicUrl, account, spending, recent: recent.rows, needsKey: !keys.some((k) => !k.revokedAt) });
      return kit.render(request, reply, { title: 'Overview', active: 'overview', body });
    });
  };
}
