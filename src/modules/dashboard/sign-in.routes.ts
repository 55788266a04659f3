import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode } from '../../errors.js';
import { ipBucket } from '../../http/client-address.js';
import { toAppError } from '../../http/errors.js';
import { checkEmailPage, confirmSignInPage, signInErrorPage, signInPage } from '../../web/dashboard/sign-in.js';
import type { DashboardSection } from './dashboard.routes.js';
import { cookieOptions, cookiesOf, safeReturnTo, SESSION_COOKIE } from './dashboard-http.js';
import { FLOW_TTL_MS, type SignedIn, type SignInRequest, type SignInService } from './sign-in.service.js';
import { SESSION_ABSOLUTE_MS } from './sessions.service.js';

/** The OpenID Connect flow cookie: only the callback under /dashboard needs it, for ten minutes. */
export const FLOW_COOKIE = 'svc_oidc_flow';
const FLOW_COOKIE_PATH = '/dashboard';

const PUBLIC = { config: { dashboard: 'public' as const } };

const ERROR_TITLES: Partial<Record<ErrorCode, string>> = {
  SIGN_IN_LINK_INVALID: 'This link cannot be used',
  SIGN_IN_FLOW_INVALID: 'Start the sign-in again',
  SIGN_IN_REFUSED: 'Sign-in cancelled',
  SIGN_IN_FAILED: 'Sign-in did not complete',
  SIGN_IN_EMAIL_MISSING: 'No email address',
  SIGN_IN_PROVIDER_UNAVAILABLE: 'The sign-in provider is unavailable',
  RATE_LIMITED: 'Slow down',
  CSRF_TOKEN_INVALID: 'This form has expired',
};

const signInRequest = (request: FastifyRequest): SignInRequest => ({
  ip: request.ip,
  userAgent: typeof request.headers['user-agent'] === 'string' ? request.headers['user-agent'] : null,
  requestId: request.id,
});

/**
 * Sign-in, sign-up and sign-out pages (public, except that sign-out needs the form's CSRF token like
 * every dashboard POST). With OpenID Connect configured the provider is the only way in; without it,
 * emailed links. Errors here render as pages that lead back to the sign-in form.
 */
/** `outboxDir`: set when emails are written to DATA_DIR/outbox (no SMTP_URL) outside production, so the page can say where. */
export function signInRoutes(deps: { signIn: SignInService; oidcName: string | undefined; outboxDir?: string }): DashboardSection {
  return (kit) => async (app) => {
    const { signIn } = deps;

    /** The session cookie (SPEC.md: HttpOnly, SameSite=Lax, host-only, Path=/), a new CSRF key, and the way on. */
    const signedIn = (request: FastifyRequest, reply: FastifyReply, done: SignedIn) => {
      reply.setCookie(SESSION_COOKIE, done.sessionToken, cookieOptions(request, kit.dashboardUrl, SESSION_ABSOLUTE_MS / 1000));
      kit.csrf.rotate(request, reply);
      return reply.redirect(done.returnTo, 303);
    };

    app.setErrorHandler(async (err, request, reply) => {
      const appErr = toAppError(err);
      if (appErr.code === 'INTERNAL_ERROR') request.log.error({ err }, 'unhandled sign-in error');
      else if (appErr.status >= 500) request.log.warn({ code: appErr.code }, 'sign-in provider error');
      const title = ERROR_TITLES[appErr.code] ?? (appErr.status === 404 ? 'Not found' : 'That did not work');
      return kit.render(request, reply.headers(appErr.headers), {
        title,
        body: signInErrorPage({ title, message: appErr.message, code: appErr.code, requestId: request.id }),
        status: appErr.status,
      });
    });

    app.get('/dashboard/sign-in', PUBLIC, async (request, reply) => {
      const returnTo = safeReturnTo((request.query as Record<string, unknown>).returnTo);
      if (request.dashboardSession) return reply.redirect(returnTo, 303);
      return kit.render(request, reply, {
        title: 'Sign in',
        body: signInPage({ csrf: kit.csrf.tokenFor(request, reply), returnTo, oidcName: signIn.oidcEnabled ? deps.oidcName : undefined, emailForm: signIn.emailEnabled }),
      });
    });

    if (signIn.emailEnabled) {
      app.post('/dashboard/sign-in/email', PUBLIC, async (request, reply) => {
        const body = (request.body ?? {}) as Record<string, string | undefined>;
        const returnTo = safeReturnTo(body.returnTo);
        try {
          const { sentTo } = await signIn.requestEmailLink({ email: body.email, returnTo, ip: ipBucket(request.ip) });
          return kit.render(request, reply, { title: 'Check your email', body: checkEmailPage({ sentTo, returnTo, outboxDir: deps.outboxDir }) });
        } catch (err) {
          if (!(err instanceof AppError && err.code === 'VALIDATION_ERROR')) throw err;
          // The form again, with the address as typed and what is wrong with it.
          return kit.render(request, reply, {
            title: 'Sign in',
            status: 400,
            body: signInPage({ csrf: kit.csrf.tokenFor(request, reply), returnTo, emailForm: true, email: body.email?.slice(0, 254), error: err.message }),
          });
        }
      });

      // The link from the email shows a button and spends nothing: mail scanners fetch links.
      app.get('/dashboard/sign-in/email/:token', PUBLIC, async (request, reply) => {
        const { token } = request.params as { token: string };
        const { email } = await signIn.checkEmailLink(token);
        return kit.render(request, reply, {
          title: 'Confirm sign-in',
          body: confirmSignInPage({ csrf: kit.csrf.tokenFor(request, reply), email, action: `/dashboard/sign-in/email/${token}` }),
        });
      });

      app.post('/dashboard/sign-in/email/:token', PUBLIC, async (request, reply) => {
        const { token } = request.params as { token: string };
        return signedIn(request, reply, await signIn.completeEmailLink(token, signInRequest(request)));
      });
    }

    if (signIn.oidcEnabled) {
      app.get('/dashboard/sign-in/oidc', PUBLIC, async (request, reply) => {
        const { flowToken, url } = await signIn.startOidc({ returnTo: (request.query as Record<string, unknown>).returnTo, ip: ipBucket(request.ip) });
        reply.setCookie(FLOW_COOKIE, flowToken, { ...cookieOptions(request, kit.dashboardUrl, FLOW_TTL_MS / 1000), path: FLOW_COOKIE_PATH });
        return reply.redirect(url, 303);
      });

      // redirect_uri = DASHBOARD_URL/auth/callback
      app.get('/dashboard/auth/callback', PUBLIC, async (request, reply) => {
        const query = new URL(request.url, 'http://callback.invalid').searchParams;
        const flowToken = cookiesOf(request)[FLOW_COOKIE];
        // Whatever the outcome, this flow is over.
        reply.clearCookie(FLOW_COOKIE, { ...cookieOptions(request, kit.dashboardUrl), path: FLOW_COOKIE_PATH });
        return signedIn(request, reply, await signIn.completeOidc({ flowToken, query, ...signInRequest(request) }));
      });
    }

    // Public, so a stale tab's sign-out still clears the cookie and lands on the sign-in page; the
    // plugin checks its CSRF token like every dashboard POST (no one else can sign a browser out).
    app.post('/dashboard/sign-out', PUBLIC, async (request, reply) => {
      await signIn.signOut(cookiesOf(request)[SESSION_COOKIE], signInRequest(request));
      reply.clearCookie(SESSION_COOKIE, cookieOptions(request, kit.dashboardUrl));
      return reply.redirect('/dashboard/sign-in', 303);
    });
  };
}
