import type { DbOrTx, Db, Tx } from '../../db/client.js';
import type { OperatorContext, RequestContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { centsToMicros, microsToCents } from '../../lib/money.js';
import type { CardCheckout, CheckoutSessionSnapshot } from '../../providers/payments/card-checkout.js';
import type { AccountRepo } from '../account/account.repo.js';
import type { AuditService } from '../audit/audit.service.js';
import type { BillingService } from './billing.service.js';
import type { TopUpRow, TopUpsRepo } from './top-ups.repo.js';

/** Whole US dollars: the presets the billing page offers, and the bounds of any other amount. */
export const TOP_UP_PRESETS_USD = [10, 25, 50, 100] as const;
export const TOP_UP_MIN_USD = 5;
export const TOP_UP_MAX_USD = 10_000;

/** Top-ups one customer may start in an hour: each is a call to Stripe, and a free account could loop. */
export const TOP_UPS_PER_HOUR = 10;

/** A row that never got a Checkout Session (Stripe failed) is collected after an hour. */
const UNSENT_TTL_MS = 3_600_000;
/**
 * Stripe's sessions expire after 24 h, but an async method (a US bank debit) settles days after the
 * session completed; past a week a pending row is expired. A payment Stripe confirms later still credits.
 */
const UNSETTLED_TTL_MS = 7 * 24 * 3_600_000;

export const CHECKOUT_EVENTS = {
  completed: 'checkout.session.completed',
  asyncSucceeded: 'checkout.session.async_payment_succeeded',
  asyncFailed: 'checkout.session.async_payment_failed',
  expired: 'checkout.session.expired',
} as const;

export type TopUpView = { id: string; amountMicros: bigint; status: TopUpRow['status']; createdAt: Date; paidAt: Date | null };

/**
 * Card top-ups through a hosted checkout (Stripe Checkout). Starting one writes the pending row in its
 * own short transaction, then calls the provider outside any transaction (DESIGN §4.13), then stores
 * the session's id. Stripe's events move the row; the balance is credited only by the transition
 * pending → paid, so each top-up credits exactly once whatever Stripe sends and however often.
 */
export function createTopUpsService(deps: {
  db: Db;
  repo: TopUpsRepo;
  accounts: Pick<AccountRepo, 'findCustomer'>;
  billing: Pick<BillingService, 'credit'>;
  audit: AuditService;
  /** Undefined when no card provider is configured: operators credit balances instead. */
  checkout: CardCheckout | undefined;
  dashboardUrl: string;
  now: () => Date;
}) {
  const { repo, audit } = deps;

  const invalidAmount = (message: string) => new AppError('VALIDATION_ERROR', message, { details: [{ path: 'body.amount', message }] });

  async function credit(tx: Tx, row: TopUpRow, session: CheckoutSessionSnapshot, eventType: string, op: OperatorContext): Promise<void> {
    const paymentIntent = typeof session.payment_intent === 'string' ? session.payment_intent : (session.payment_intent?.id ?? null);
    const paid = await repo.markPaid(tx, row.id, deps.now(), paymentIntent);
    if (!paid) return; // credited already (a redelivery, or completed followed by async_payment_succeeded)
    const { entry } = await deps.billing.credit(tx, { customerId: row.customerId, micros: row.amountMicros, direction: 'credit', description: 'Card top-up' });
    await repo.setLedgerEntry(tx, row.id, entry.id);
    await audit.operator(tx, op, {
      customerId: row.customerId,
      action: 'credits.top_up',
      resourceType: 'card_top_up',
      resourceId: row.id,
      metadata: { amountCents: microsToCents(row.amountMicros), checkoutSessionId: session.id, ledgerEntryId: entry.id, eventType },
    });
  }

  return {
    enabled: deps.checkout !== undefined,

    /** Opens a hosted payment page for `amountCents` (whole dollars within the bounds) and answers its URL. */
    async start(ctx: RequestContext, amountCents: number): Promise<{ topUpId: string; checkoutUrl: string }> {
      if (!deps.checkout) throw new AppError('NOT_FOUND', 'Card top-ups are not configured on this server (STRIPE_SECRET_KEY)');
      if (!Number.isSafeInteger(amountCents) || amountCents % 100 !== 0) throw invalidAmount('Choose a whole number of dollars');
      if (amountCents < TOP_UP_MIN_USD * 100 || amountCents > TOP_UP_MAX_USD * 100) {
        throw invalidAmount(`Choose an amount between $${TOP_UP_MIN_USD} and $${TOP_UP_MAX_USD.toLocaleString('en-US')}`);
      }
      const customerId = ctx.actor.customerId;
      const customer = await deps.accounts.findCustomer(deps.db, customerId);
      if (!customer) throw new AppError('UNAUTHORIZED', 'The session no longer resolves to a customer');
      const hourAgo = new Date(deps.now().getTime() - 3_600_000);
      if ((await repo.countStartedSince(deps.db, customerId, hourAgo)) >= TOP_UPS_PER_HOUR) {
        throw new AppError('RATE_LIMITED', `At most ${TOP_UPS_PER_HOUR} top-ups can be started in an hour; finish or wait for one of them`, { retryAfterSeconds: 3600 }, { 'Retry-After': '3600' });
      }

      // The row first, so every Checkout Session Stripe ever holds for us has its row.
      const row = await deps.db.transaction(async (tx) => {
        const inserted = await repo.insert(tx, { customerId, amountMicros: centsToMicros(amountCents) });
        await audit.customer(tx, ctx, { action: 'card_top_up.start', resourceType: 'card_top_up', resourceId: inserted.id, metadata: { amountCents } });
        return inserted;
      });
      // Outside any transaction; a failure leaves the row pending without a session (the sweep expires it).
      const opened = await deps.checkout.createCheckout({
        topUpId: row.id,
        customerId,
        amountCents,
        // A wallet customer's address is synthetic and undeliverable (RFC 2606 .invalid): Stripe asks instead.
        email: customer.email.endsWith('.invalid') ? null : customer.email,
        successUrl: `${deps.dashboardUrl}/billing?topup=success`,
        cancelUrl: `${deps.dashboardUrl}/billing?topup=cancelled`,
      });
      await deps.db.transaction((tx) => repo.attachSession(tx, row.id, opened.id));
      return { topUpId: row.id, checkoutUrl: opened.url };
    },

    /**
     * One Checkout event, in the transaction that records the event id. Money moves only when Stripe
     * says the session is paid, the row is ours (session id and metadata agree) and the amounts match;
     * anything else that claims a payment is acknowledged and raised to the operator, never credited.
     */
    async applyCheckoutEvent(tx: Tx, eventType: string, session: CheckoutSessionSnapshot, op: OperatorContext): Promise<void> {
      const paid = eventType === CHECKOUT_EVENTS.asyncSucceeded || (eventType === CHECKOUT_EVENTS.completed && session.payment_status === 'paid');
      const failed = eventType === CHECKOUT_EVENTS.expired || eventType === CHECKOUT_EVENTS.asyncFailed;
      // completed with payment_status unpaid: an async method is still collecting; its own event follows.
      if (!paid && !failed) return;

      const row = await repo.findBySession(tx, session.id);
      const alert = (kind: string, message: string) =>
        audit.alert(tx, {
          kind,
          message,
          customerId: row?.customerId ?? null,
          resourceType: 'card_top_up',
          resourceId: row?.id ?? null,
          data: { checkoutSessionId: session.id, eventType, amountTotal: session.amount_total, currency: session.currency, metadata: session.metadata ?? {} },
        });
      if (!row) {
        if (paid) await alert('card_top_up_unknown_session', `Stripe reports Checkout Session ${session.id} paid, but no top-up has that session: nothing was credited`);
        return;
      }
      if (session.metadata?.topUpId !== row.id || session.metadata?.customerId !== row.customerId) {
        if (paid) await alert('card_top_up_mismatch', `Checkout Session ${session.id} names another top-up or customer in its metadata than top-up ${row.id}: nothing was credited`);
        return;
      }

      if (failed) {
        if (await repo.markExpired(tx, row.id)) {
          await audit.operator(tx, op, { customerId: row.customerId, action: 'card_top_up.expire', resourceType: 'card_top_up', resourceId: row.id, metadata: { checkoutSessionId: session.id, eventType } });
        }
        return;
      }
      const cents = microsToCents(row.amountMicros);
      if (session.amount_total !== cents || session.currency !== 'usd') {
        await alert('card_top_up_amount_mismatch', `Checkout Session ${session.id} was paid ${session.amount_total ?? '?'} ${session.currency ?? '?'} but top-up ${row.id} is ${cents} usd cents: nothing was credited`);
        return;
      }
      await credit(tx, row, session, eventType, op);
    },

    /** The billing page's list: the customer's own top-ups that reached the payment page. */
    async recent(db: DbOrTx, customerId: string, limit = 10): Promise<TopUpView[]> {
      const rows = await repo.listForCustomer(db, customerId, limit);
      return rows.map((r) => ({ id: r.id, amountMicros: r.amountMicros, status: r.status, createdAt: r.createdAt, paidAt: r.paidAt }));
    },

    /** The sweep: pending rows that never reached Stripe, or that Stripe never settled, become expired. */
    async expireStale(tx: Tx): Promise<number> {
      const now = deps.now().getTime();
      const rows = await repo.expireStale(tx, { unsentBefore: new Date(now - UNSENT_TTL_MS), before: new Date(now - UNSETTLED_TTL_MS) });
      const system: OperatorContext = { actorType: 'system', requestId: null, ip: null };
      for (const r of rows) await audit.operator(tx, system, { customerId: r.customerId, action: 'card_top_up.expire', resourceType: 'card_top_up', resourceId: r.id, metadata: { reason: 'sweep' } });
      return rows.length;
    },
  };
}

export type TopUpsService = ReturnType<typeof createTopUpsService>;
