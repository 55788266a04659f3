import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { fastifyCookie } from '@fastify/cookie';
import type { Actor, RequestContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { safeEqual } from '../../lib/crypto.js';
import { createLinkTokens } from '../../lib/link-tokens.js';
import type { DashboardSession } from './sessions.service.js';

/** SPEC.md's cookie: HttpOnly, SameSite=Lax, host-only, Path=/ (the products routes under /v1 read it too). */
export const SESSION_COOKIE = 'svc_session';
/**
 * The browser's CSRF key: forms carry HMAC(secret, this value and the session cookie), which another
 * site can neither read nor forge. Over https it is the `__Host-` cookie, which only this host can set
 * (Secure, Path=/, no Domain): a sibling subdomain or a plain-http answer cannot plant a key of its own.
 */
export const CSRF_COOKIE = 'svc_csrf';
export const HOST_CSRF_COOKIE = '__Host-svc_csrf';
export const CSRF_FIELD = '_csrf';
export const CSRF_HEADER = 'x-csrf-token';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Dashboard pages: `session` needs a signed-in browser (else a redirect to sign-in); `public` does not. */
    dashboard?: 'session' | 'public';
    /** A /v1 route that also accepts the dashboard session cookie (SPEC.md: the products routes only). */
    sessionCookie?: boolean;
  }
  interface FastifyRequest {
    /** The signed-in dashboard browser, set on dashboard routes when the cookie names a live session. */
    dashboardSession?: DashboardSession;
  }
}

export const cookiesOf = (request: FastifyRequest): Record<string, string | undefined> => fastifyCookie.parse(request.headers.cookie ?? '');

/** Whether the browser reached us over https: DASHBOARD_URL says so, or a trusted proxy does (X-Forwarded-Proto). */
const overHttps = (request: FastifyRequest, dashboardUrl: string) => dashboardUrl.startsWith('https:') || request.protocol === 'https';

/** Secure whenever the browser reached us over https. A Secure cookie over plain http is never sent back, which would break local use. */
export function cookieOptions(request: FastifyRequest, dashboardUrl: string, maxAgeSeconds?: number) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: overHttps(request, dashboardUrl),
    ...(maxAgeSeconds !== undefined && { maxAge: maxAgeSeconds }),
  };
}

/**
 * CSRF tokens derived from the browser's CSRF cookie and its session cookie (signed double submit: the
 * server secret makes the pair unforgeable). Bound to the session, a token handed out before sign-in,
 * or a key and token planted in the browser, is worth nothing for the session it then holds.
 */
export function createCsrf(secret: string, dashboardUrl: string) {
  const tokens = createLinkTokens(secret, 'dashboard-csrf');
  const cookieName = (request: FastifyRequest) => (overHttps(request, dashboardUrl) ? HOST_CSRF_COOKIE : CSRF_COOKIE);
  const tokenOf = (request: FastifyRequest, key: string) => tokens.token(`${key}:${cookiesOf(request)[SESSION_COOKIE] ?? ''}`);
  // The key given to a browser that had none, per request: a page asks for the token for its own
  // forms and again for the layout's, and both must match the one cookie the reply sets.
  const issued = new WeakMap<FastifyRequest, string>();
  const issue = (request: FastifyRequest, reply: FastifyReply): string => {
    const key = randomBytes(32).toString('base64url');
    issued.set(request, key);
    reply.setCookie(cookieName(request), key, cookieOptions(request, dashboardUrl));
    return key;
  };
  return {
    /** The token for forms on this page; gives the browser its CSRF cookie first if it has none. */
    tokenFor(request: FastifyRequest, reply: FastifyReply): string {
      const key = issued.get(request) ?? cookiesOf(request)[cookieName(request)];
      return tokenOf(request, key && key.length >= 32 && key.length <= 64 ? key : issue(request, reply));
    },

    /** At sign-in: a new key, so that nothing handed out before it (or planted) is a token afterwards. */
    rotate(request: FastifyRequest, reply: FastifyReply): void {
      issue(request, reply);
    },

    /** Throws CSRF_TOKEN_INVALID unless the request carries the token of its own CSRF and session cookies (form field or header). */
    verify(request: FastifyRequest): void {
      const key = cookiesOf(request)[cookieName(request)];
      const parsed = request.body as Record<string, unknown> | undefined;
      // A multipart form (an upload) carries its fields beside its files (http/multipart.ts).
      const body = parsed && typeof parsed.fields === 'object' && Array.isArray(parsed.files) ? (parsed.fields as Record<string, unknown>) : parsed;
      const header = request.headers[CSRF_HEADER];
      const given = typeof body?.[CSRF_FIELD] === 'string' ? (body[CSRF_FIELD] as string) : typeof header === 'string' ? header : undefined;
      if (!key || !given || !safeEqual(given, tokenOf(request, key))) {
        throw new AppError('CSRF_TOKEN_INVALID', 'This form has expired or did not come from the dashboard: reload the page and try again');
      }
    },
  };
}

export type Csrf = ReturnType<typeof createCsrf>;

/** The session as the caller the services know; test-mode pages read test data (Stripe's "view test data"). */
export function sessionActor(session: DashboardSession, mode: 'live' | 'test' = 'live'): Actor {
  return { customerId: session.customerId, mode, via: 'session', keyId: null };
}

export function sessionContext(request: FastifyRequest, mode: 'live' | 'test' = 'live'): RequestContext {
  const session = request.dashboardSession;
  if (!session) throw new Error('sessionContext on a dashboard route without a session');
  return { actor: sessionActor(session, mode), requestId: request.id, ip: request.ip, testModeHeader: false };
}

/**
 * Where to go after sign-in: only a path inside the dashboard. Anything else (another host, `//evil`,
 * a backslash trick, a scheme, a control character) falls back to the overview: no open redirect. The
 * answer is always a valid Location header: characters beyond ASCII are percent-encoded as a browser
 * would (written raw, anything above U+00FF throws once the sign-in has committed).
 */
export function safeReturnTo(value: unknown): string {
  if (typeof value !== 'string' || value.length > 512) return '/dashboard';
  if (!/^\/dashboard(?:[/?#]|$)/.test(value) || /[\\\s\x00-\x1f\x7f]|\/\/|%2f|%5c/i.test(value)) return '/dashboard';
  // Dot segments (`/dashboard/../x`, also percent-encoded) would leave the dashboard once the browser resolves them.
  if (/\/(?:\.|%2e){1,2}(?:[/?#]|$)/i.test(value)) return '/dashboard';
  let encoded: string;
  try {
    encoded = value.replace(/[^\x00-\x7f]+/gu, encodeURIComponent);
  } catch {
    return '/dashboard'; // a lone surrogate: no URL can carry it
  }
  return encoded.length > 512 ? '/dashboard' : encoded;
}
