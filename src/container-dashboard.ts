import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Db } from './db/client.js';
import type { AccountRepo } from './modules/account/account.repo.js';
import type { AuditService } from './modules/audit/audit.service.js';
import { createCsrf } from './modules/dashboard/dashboard-http.js';
import { createSessionsRepo } from './modules/dashboard/sessions.repo.js';
import { createSessionsService } from './modules/dashboard/sessions.service.js';
import { createSignInRepo } from './modules/dashboard/sign-in.repo.js';
import { createSignInService } from './modules/dashboard/sign-in.service.js';
import { createOidcClient } from './providers/oidc/index.js';

/**
 * The composition root's dashboard: server-side sessions, CSRF tokens keyed by the link secret (a purpose
 * of its own), and sign-in: OpenID Connect when OIDC_* is set (discovered on the first sign-in), else
 * emailed links.
 */
export function createDashboard(deps: { db: Db; config: Config; accounts: AccountRepo; audit: AuditService; logger: Logger; now: () => Date }) {
  const { db, config, now } = deps;
  const sessions = createSessionsService({ repo: createSessionsRepo(), now });
  return {
    sessions,
    csrf: createCsrf(config.signingLinkSecret, config.dashboardUrl),
    signIn: createSignInService({
      db,
      repo: createSignInRepo(),
      accounts: deps.accounts,
      sessions,
      audit: deps.audit,
      oidc:
        config.oidc &&
        createOidcClient({
          issuer: config.oidc.issuer,
          clientId: config.oidc.clientId,
          clientSecret: config.oidc.clientSecret,
          redirectUri: `${config.dashboardUrl}/auth/callback`,
          onError: (err, during) => deps.logger.warn({ err: (err as Error).message, during }, 'OpenID Connect provider error'),
        }),
      signingLinkSecret: config.signingLinkSecret,
      dashboardUrl: config.dashboardUrl,
      sandboxLimit: config.sandboxLimit,
      now,
    }),
  };
}
