import type Stripe from 'stripe';
import type { Db } from './db/client.js';
import type { AccountRepo } from './modules/account/account.repo.js';
import type { AuditService } from './modules/audit/audit.service.js';
import type { BillingService } from './modules/billing/billing.service.js';
import { createCardReversalsRepo } from './modules/billing/card-reversals.repo.js';
import { REVERSAL_EVENTS, createCardReversalsService } from './modules/billing/card-reversals.service.js';
import { createTopUpsRepo } from './modules/billing/top-ups.repo.js';
import { CHECKOUT_EVENTS, createTopUpsService } from './modules/billing/top-ups.service.js';
import type { StripeEventHandler } from './modules/stripe/stripe-events.service.js';
import { createStripeCardCheckout, type CheckoutSessionSnapshot } from './providers/payments/card-checkout.js';

/**
 * The composition root's card payments: top-ups through Stripe Checkout, the refunds and disputes that
 * take them back, and the handlers POST /webhooks/stripe runs for their events. Checkout is on when
 * Stripe and its webhook are configured (only the webhook credits a payment: without it Signet would
 * take money it never books); otherwise operators credit balances.
 */
export function createCardPayments(deps: {
  db: Db;
  stripe: Stripe | undefined;
  webhookSecret: string | undefined;
  accounts: AccountRepo;
  billing: BillingService;
  audit: AuditService;
  dashboardUrl: string;
  now: () => Date;
}) {
  const { db, billing, audit, now } = deps;
  const repo = createTopUpsRepo();
  const checkout = deps.stripe && deps.webhookSecret ? createStripeCardCheckout(deps.stripe) : undefined;
  const topUps = createTopUpsService({ db, repo, accounts: deps.accounts, billing, audit, checkout, dashboardUrl: deps.dashboardUrl, now });
  const reversals = createCardReversalsService({ repo: createCardReversalsRepo(), topUps: repo, billing, audit, now });
  const applyCheckout: StripeEventHandler = (tx, event, op) => topUps.applyCheckoutEvent(tx, event.type, event.data.object as CheckoutSessionSnapshot, op);
  const stripeHandlers: Record<string, StripeEventHandler> = {
    ...Object.fromEntries(Object.values(CHECKOUT_EVENTS).map((type) => [type, applyCheckout])),
    ...Object.fromEntries(REVERSAL_EVENTS.map((type) => [type, reversals.applyEvent])),
  };
  return { topUps, stripeHandlers };
}
