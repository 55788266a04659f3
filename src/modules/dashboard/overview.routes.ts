import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Db } from '../../db/client.js';
import { overviewPage } from '../../web/dashboard/overview.js';
import type { AccountService } from '../account/account.service.js';
import type { ApiKeysService } from '../account/api-keys.service.js';
import type { SummaryService } from '../account/summary.service.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';
import { sessionContext } from './dashboard-http.js';
import type { DashboardSection } from './dashboard.routes.js';
import { ZModeAskedQuery, withTestFallback } from './page-query.js';

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
    r.get('/dashboard', { config: { dashboard: 'session' }, schema: { querystring: ZModeAskedQuery } }, async (request, reply) => {
      const ctx = sessionContext(request);
      const recentOf = (m: 'live' | 'test') => deps.envelopes.list(deps.db, sessionContext(request, m), {}, { style: 'offset', limit: RECENT, offset: 0 });
      const [account, spending, keys, recent] = await Promise.all([
        deps.account.getAccount(deps.db, ctx.actor),
        deps.summary.dailySpending(deps.db, ctx.actor.customerId, 30),
        deps.apiKeys.list(deps.db, ctx.actor),
        withTestFallback(request.query.mode, recentOf),
      ]);
      const { mode, testFallback } = recent;
      // Nothing on either side yet (a fallback means test data exists): the page leads with the first call.
      const neverSent = recent.result.total === 0 && (request.query.mode === undefined || (await recentOf(mode === 'live' ? 'test' : 'live')).total === 0);
      const body = overviewPage({
        mode,
        testFallback,
        neverSent,
        publicUrl: deps.publicUrl,
        account,
        spending,
        recent: recent.result.rows,
        needsKey: !keys.some((k) => !k.revokedAt),
      });
      return kit.render(request, reply, { title: 'Overview', active: 'overview', body });
    });
  };
}
