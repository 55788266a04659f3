import fastifyCookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { toAppError } from '../../http/errors.js';
import { DASHBOARD_CSP, loadDashboardAssets, renderPage, escapeHtml, type NavId, type PageShell } from '../../web/dashboard/layout.js';
import type { AccountRepo } from '../account/account.repo.js';
import { cookiesOf, SESSION_COOKIE, type Csrf } from './dashboard-http.js';
import type { SessionsService } from './sessions.service.js';

/** Forms are a few fields; anything bigger is not ours. */
const FORM_BODY_LIMIT = 16 * 1024;

export type DashboardPage = { title: string; active?: NavId; body: string; flash?: PageShell['flash']; status?: number };

/**
 * What every dashboard route module gets: the rendering shell (assets, CSRF token, the signed-in
 * account in the top bar) and the pieces of the session machinery. Route modules stay thin: they call
 * services and render with web/dashboard.
 */
export type DashboardKit = {
  dashboardUrl: string;
  csrf: Csrf;
  sessions: SessionsService;
  render(request: FastifyRequest, reply: FastifyReply, page: DashboardPage): Promise<FastifyReply>;
};

export type DashboardSection = (kit: DashboardKit) => (app: FastifyInstance) => Promise<void>;

/**
 * /dashboard: server-rendered pages for a signed-in browser. This plugin owns what all of them share:
 * cookies, urlencoded forms, the session lookup, CSRF on every POST, a strict CSP, no caching, the
 * static files, and errors rendered as a page rather than JSON. Sections (sign-in, keys, billing, …)
 * register inside it.
 */
export function dashboardRoutes(deps: {
  db: Db;
  accounts: Pick<AccountRepo, 'findCustomer'>;
  sessions: SessionsService;
  csrf: Csrf;
  dashboardUrl: string;
  sections: DashboardSection[];
  /** The sealing certificate as checked at start: an untrusted one is noted on every page. */
  seal?: () => { certificate: 'development' | 'configured'; selfSigned: boolean } | undefined;
}) {
  return async function (app: FastifyInstance): Promise<void> {
    const assets = loadDashboardAssets();
    await app.register(fastifyCookie);

    app.removeContentTypeParser('application/x-www-form-urlencoded');
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });

    app.addHook('onRoute', (route) => {
      route.schema = { hide: true, ...route.schema };
      route.helmet ??= { contentSecurityPolicy: { useDefaults: false, directives: DASHBOARD_CSP }, frameguard: { action: 'deny' } };
    });

    app.addHook('preHandler', async (request, reply) => {
      if (!request.url.startsWith('/dashboard/assets/')) reply.header('cache-control', 'no-store');
      const need = request.routeOptions.config.dashboard;
      if (need === undefined) return;
      request.dashboardSession = await deps.sessions.resolve(deps.db, cookiesOf(request)[SESSION_COOKIE]);
      if (need === 'session' && !request.dashboardSession) {
        if (request.method !== 'GET') throw new AppError('UNAUTHORIZED', 'Your session has ended: sign in again');
        return reply.redirect(`/dashboard/sign-in?returnTo=${encodeURIComponent(request.url)}`, 303);
      }
      if (request.method === 'POST') deps.csrf.verify(request);
    });

    const kit: DashboardKit = {
      dashboardUrl: deps.dashboardUrl,
      csrf: deps.csrf,
      sessions: deps.sessions,
      async render(request, reply, page) {
        const session = request.dashboardSession;
        const customer = session && (await deps.accounts.findCustomer(deps.db, session.customerId));
        const html = renderPage({
          title: page.title,
          assets: assets.prefix,
          csrf: deps.csrf.tokenFor(request, reply),
          account: customer ? { email: customer.email, active: page.active ?? 'overview' } : undefined,
          notice: sealNotice(deps.seal?.()),
          flash: page.flash,
          body: page.body,
        });
        return reply.code(page.status ?? 200).type('text/html; charset=utf-8').send(html);
      },
    };

    app.setErrorHandler(async (err, request, reply) => {
      const appErr = toAppError(err);
      if (appErr.code === 'INTERNAL_ERROR') request.log.error({ err }, 'unhandled dashboard error');
      const body = `<h1>${escapeHtml(titleOf(appErr.status))}</h1><p>${escapeHtml(appErr.message)}</p><p><small>Code <code>${appErr.code}</code> · request <code>${escapeHtml(request.id)}</code></small></p><p><a href="/dashboard">Back to the dashboard</a></p>`;
      return kit.render(request, reply.headers(appErr.headers), { title: titleOf(appErr.status), body, status: appErr.status });
    });

    app.get('/dashboard/assets/*', { config: { rateLimit: false } }, async (request, reply) => {
      const asset = assets.get((request.params as { '*': string })['*']);
      if (!asset) throw new AppError('NOT_FOUND', 'No such file');
      return reply.type(asset.type).header('cache-control', 'public, max-age=31536000, immutable').send(asset.body);
    });

    for (const section of deps.sections) await app.register(section(kit));

    // Any other /dashboard path is a page that does not exist: say so as a page, not as JSON.
    app.get('/dashboard/*', { config: { dashboard: 'public' } }, async () => {
      throw new AppError('NOT_FOUND', 'There is no such page in the dashboard');
    });
  };
}

/** What a customer should know before sending documents: readers will not trust the seal. */
function sealNotice(seal: { certificate: 'development' | 'configured'; selfSigned: boolean } | undefined): string | undefined {
  if (seal?.certificate === 'development') return 'development seal: not trusted by PDF readers. Completed documents are sealed with a self-signed certificate this server made for itself; its operator should configure a certificate from a certification authority (SIGNING_CERT_P12_PATH).';
  if (seal?.selfSigned) return 'self-signed seal: not trusted by PDF readers unless they were told to trust this server\'s certificate.';
  return undefined;
}

function titleOf(status: number): string {
  if (status === 401) return 'Please sign in';
  if (status === 403) return 'Not allowed';
  if (status === 404) return 'Not found';
  if (status === 429) return 'Slow down';
  if (status >= 500) return 'Something went wrong';
  return 'That did not work';
}
