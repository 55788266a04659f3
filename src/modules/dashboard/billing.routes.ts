import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { renderBillingBody } from '../../web/dashboard/billing.js';
import { DASHBOARD_CSP } from '../../web/dashboard/layout.js';
import type { AccountService } from '../account/account.service.js';
import { TOP_UP_MAX_USD, TOP_UP_MIN_USD, TOP_UP_PRESETS_USD, type TopUpsService } from '../billing/top-ups.service.js';
import type { DashboardPage, DashboardSection } from './dashboard.routes.js';
import { sessionActor, sessionContext } from './dashboard-http.js';

/** A hand-edited or stale link falls back to the first page rather than an error page (as the other lists do). */
const ZBillingQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional().catch(undefined),
  offset: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().catch(undefined),
  /** Where Stripe sends the browser back; only these two values mean anything. */
  topup: z.string().max(32).optional().catch(undefined),
});

/** Fixed texts for Stripe's return: the query value only picks one, it is never shown. */
const NOTICES: Record<string, NonNullable<DashboardPage['flash']>> = {
  success: { kind: 'ok', text: 'Thank you: your payment went through. Your balance grows as soon as Stripe confirms it, usually within a minute.' },
  cancelled: { kind: 'error', text: 'The top-up was cancelled: nothing was charged.' },
};

const DEFAULT_USD = 25;

/** The form's amount in cents: the "another amount" field when filled in, else the chosen preset. */
function amountCentsOf(body: Record<string, string> | undefined): number {
  const custom = body?.customAmount?.trim() ?? '';
  const chosen = custom !== '' ? custom : (body?.amount ?? '');
  const presets: readonly string[] = TOP_UP_PRESETS_USD.map(String);
  if (custom === '' && !presets.includes(chosen)) {
    throw new AppError('VALIDATION_ERROR', 'Choose one of the amounts or enter another one', { details: [{ path: 'body.amount', message: 'not one of the offered amounts' }] });
  }
  if (!/^\d{1,6}$/.test(chosen)) {
    throw new AppError('VALIDATION_ERROR', 'Enter a whole number of US dollars, such as 40', { details: [{ path: 'body.customAmount', message: 'not a whole number of dollars' }] });
  }
  return Number(chosen) * 100;
}

/**
 * GET /dashboard/billing and POST /dashboard/billing/top-up. The page is INSUFFICIENT_BALANCE's
 * topUpUrl. Its CSP lets the top-up form's redirect reach Stripe's Checkout page: Chrome applies
 * form-action to where a submitted form is redirected, not only to its action.
 */
export function billingSection(deps: { db: Db; account: Pick<AccountService, 'getAccount' | 'listUsage'>; topUps: TopUpsService; stripeApiUrl: string | undefined }): DashboardSection {
  const formAction = ["'self'", 'https://checkout.stripe.com', ...(deps.stripeApiUrl ? [new URL(deps.stripeApiUrl).origin] : [])];
  const helmet = { contentSecurityPolicy: { useDefaults: false, directives: { ...DASHBOARD_CSP, 'form-action': formAction } }, frameguard: { action: 'deny' as const } };

  return (kit) => async (app) => {
    async function renderBilling(request: FastifyRequest, reply: FastifyReply, opts: { limit?: number; offset?: number; flash?: DashboardPage['flash']; status?: number }) {
      const session = request.dashboardSession!;
      const actor = sessionActor(session);
      const paging = { style: 'offset' as const, limit: opts.limit ?? 20, offset: opts.offset ?? 0 };
      const account = await deps.account.getAccount(deps.db, actor);
      const usage = await deps.account.listUsage(deps.db, actor, paging);
      const topUps = await deps.topUps.recent(deps.db, session.customerId);
      const body = renderBillingBody({
        csrf: kit.csrf.tokenFor(request, reply),
        customerId: account.accountId,
        balanceMicros: BigInt(account.balanceMicros),
        sandboxUsed: account.sandboxUsed,
        sandboxLimit: account.sandboxLimit,
        cardTopUp: deps.topUps.enabled ? { presetsUsd: TOP_UP_PRESETS_USD, defaultUsd: DEFAULT_USD, minUsd: TOP_UP_MIN_USD, maxUsd: TOP_UP_MAX_USD } : undefined,
        topUps,
        usage: { rows: usage.rows, total: usage.total, limit: paging.limit, offset: paging.offset },
      });
      return kit.render(request, reply, { title: 'Billing', active: 'billing', body, flash: opts.flash, status: opts.status });
    }

    app.get('/dashboard/billing', { config: { dashboard: 'session' }, helmet, schema: { querystring: ZBillingQuery } }, async (request, reply) => {
      const q = request.query as z.infer<typeof ZBillingQuery>;
      const flash = q.topup && Object.hasOwn(NOTICES, q.topup) ? NOTICES[q.topup] : undefined;
      return renderBilling(request, reply, { limit: q.limit, offset: q.offset, flash });
    });

    app.post('/dashboard/billing/top-up', { config: { dashboard: 'session' }, helmet }, async (request, reply) => {
      try {
        const { checkoutUrl } = await deps.topUps.start(sessionContext(request), amountCentsOf(request.body as Record<string, string> | undefined));
        return reply.redirect(checkoutUrl, 303);
      } catch (err) {
        // The page again, with the form and what went wrong: a refused amount, too many starts, or Stripe not answering.
        if (err instanceof AppError && (err.code === 'VALIDATION_ERROR' || err.code === 'RATE_LIMITED' || err.code === 'CARD_PROVIDER_UNAVAILABLE')) {
          return renderBilling(request, reply.headers(err.headers), { flash: { kind: 'error', text: err.message }, status: err.status });
        }
        throw err;
      }
    });
  };
}
