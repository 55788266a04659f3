import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { ActorResolver } from '../../http/auth.js';
import { cookiesOf, SESSION_COOKIE, sessionActor, type Csrf } from './dashboard-http.js';
import type { SessionsService } from './sessions.service.js';

/**
 * The dashboard cookie as an API credential, on the routes that say so (SPEC.md: the products routes)
 * and only when no bearer is sent. Everywhere else under /v1 the cookie authenticates nothing. A
 * mutation needs the page's CSRF token in X-CSRF-Token: SameSite=Lax alone still lets a same-site page post.
 */
export function sessionCookieResolver(deps: { db: Db; sessions: SessionsService; csrf: Csrf }): ActorResolver {
  return async (request, bearer) => {
    if (bearer !== undefined || !request.routeOptions.config.sessionCookie) return undefined;
    const token = cookiesOf(request)[SESSION_COOKIE];
    if (token === undefined) return undefined;
    const session = await deps.sessions.resolve(deps.db, token);
    if (!session) throw new AppError('UNAUTHORIZED', 'The dashboard session has ended: sign in again');
    if (request.method !== 'GET' && request.method !== 'HEAD') deps.csrf.verify(request);
    return sessionActor(session);
  };
}
