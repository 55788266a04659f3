/**
 * Card refunds and disputes take a top-up's credit back (issue 32, item 18): the real `stripe` SDK
 * pointed at the local stand-in of Stripe's API, a top-up paid through the dashboard as a customer
 * would, then Stripe's `charge.refunded` and `charge.dispute.*` events for its charge, signed as Stripe
 * signs them. Each event moves the balance once however often it is delivered, never below zero (the
 * operator is alerted to what the balance could not cover), and a dispute ended in our favour gives back
 * what it took.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import Stripe from 'stripe';
import { auditLog, cardReversals, cardTopUps, customers, ledgerEntries, operatorAlerts } from '../src/db/schema/index.js';
import { form, signInDashboard } from './fixtures/dashboard.js';
import { createEnvelope, person } from './fixtures/envelopes.js';
import { startStripeStandin, type DisputeStatus, type StripeStandin } from './fixtures/stripe-standin.js';
import { createTestApp, type TestApp, type TestCustomer } from './harness.js';

const SECRET_KEY = 'sk_test_standin0123456789';
const WEBHOOK_SECRET = 'whsec_standin0123456789abcdef';

let t: TestApp;
let stripe: StripeStandin;
// Only for signing test events, as Stripe would; it never calls the network.
const signer = new Stripe(SECRET_KEY);

before(async () => {
  stripe = await startStripeStandin({ secretKey: SECRET_KEY });
  t = await createTestApp({ env: { STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_URL: stripe.url } });
});
after(async () => {
  await t?.close();
  await stripe?.close();
});

/** Posts an event as Stripe does: the exact JSON text, signed over those bytes. */
async function deliver(event: { payload: string }): Promise<{ received: boolean; applied: boolean }> {
  const signature = signer.webhooks.generateTestHeaderString({ payload: event.payload, secret: WEBHOOK_SECRET });
  const res = await t.app.inject({ method: 'POST', url: '/webhooks/stripe', headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature }, payload: event.payload });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** A customer with no balance who topped up `dollars` by card through the dashboard; answers the paid Checkout Session. */
async function toppedUp(dollars: number): Promise<{ customer: TestCustomer; sessionId: string; topUpId: string }> {
  const customer = await t.createCustomer(0);
  const browser = await signInDashboard(t, customer.id);
  const res = await t.app.inject({ method: 'POST', url: '/dashboard/billing/top-up', ...form(browser, { customAmount: String(dollars) }) });
  assert.equal(res.statusCode, 303, res.body);
  const sessionId = new URL(String(res.headers.location)).pathname.split('/').pop()!;
  stripe.completeCheckout(sessionId, 'paid');
  assert.deepEqual(await deliver(stripe.event('checkout.session.completed', sessionId)), { received: true, applied: true });
  assert.equal(await balanceOf(customer.id), BigInt(dollars) * 1_000_000n);
  const [row] = await t.container.db.select().from(cardTopUps).where(eq(cardTopUps.customerId, customer.id));
  assert.equal(row.paymentIntentId, stripe.checkoutSessions.get(sessionId)!.payment_intent, 'the paid top-up keeps its PaymentIntent');
  return { customer, sessionId, topUpId: row.id };
}

const balanceOf = async (customerId: string) => (await t.container.db.select().from(customers).where(eq(customers.id, customerId)))[0].balanceMicros;
const ledgerOf = (customerId: string, direction: 'reversal' | 'credit') =>
  t.container.db.select().from(ledgerEntries).where(and(eq(ledgerEntries.customerId, customerId), eq(ledgerEntries.direction, direction))).orderBy(ledgerEntries.createdAt);
const auditOf = (topUpId: string, action: string) => t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, topUpId), eq(auditLog.action, action)));
const alertsOf = (kind: string, topUpId: string | null) => t.container.db.select().from(operatorAlerts).where(eq(operatorAlerts.kind, kind)).then((rows) => rows.filter((a) => a.resourceId === topUpId));
const topUpOf = async (topUpId: string) => (await t.container.db.select().from(cardTopUps).where(eq(cardTopUps.id, topUpId)))[0];
const usd = (dollars: number) => BigInt(Math.round(dollars * 100)) * 10_000n;

describe('charge.refunded', () => {
  test('a full refund takes the top-up back once, however often Stripe delivers the event', async () => {
    const { customer, sessionId, topUpId } = await toppedUp(25);
    const charge = stripe.refundCheckout(sessionId);
    const event = stripe.event('charge.refunded', charge.id);
    assert.deepEqual(await deliver(event), { received: true, applied: true });
    assert.deepEqual(await deliver(event), { received: true, applied: false });
    assert.equal(await balanceOf(customer.id), 0n);

    const taken = await ledgerOf(customer.id, 'reversal');
    assert.deepEqual(taken.map((e) => [e.amountMicros, e.balanceAfterMicros, e.description]), [[usd(25), 0n, 'Card top-up refunded']]);
    const top = await topUpOf(topUpId);
    assert.deepEqual([top.status, top.reversedMicros, top.unrecoveredMicros], ['paid', usd(25), 0n]);
    const [audit] = await auditOf(topUpId, 'credits.reverse');
    assert.equal(audit.customerId, customer.id);
    assert.deepEqual([audit.actorType, (audit.metadata as Record<string, unknown>).takenCents, (audit.metadata as Record<string, unknown>).ledgerEntryId], ['system', 2500, taken[0].id]);
    assert.deepEqual(await alertsOf('card_reversal_unrecovered', topUpId), []);

    // The account's usage lists it as a reversal (not spending), and the billing page as money out.
    const usage = await t.app.inject({ url: '/v1/account/usage', headers: { authorization: `Bearer ${customer.apiKey}` } });
    assert.deepEqual(usage.json().data.map((e: { direction: string; amountCents: number }) => [e.direction, e.amountCents]), [['reversal', 2500], ['credit', 2500]]);
    const page = await t.app.inject({ url: '/dashboard/billing', headers: { cookie: (await signInDashboard(t, customer.id)).cookie } });
    assert.match(page.body, /<td data-label="Amount"><span class="badge muted">−\$25\.00<\/span><\/td><td data-label="Description"><span title="Card top-up refunded">Card top-up refunded<\/span><\/td>/);
  });

  test('partial refunds take what each adds; an older event delivered late takes nothing', async () => {
    const { customer, sessionId, topUpId } = await toppedUp(50);
    const first = stripe.event('charge.refunded', stripe.refundCheckout(sessionId, 1000).id);
    const second = stripe.event('charge.refunded', stripe.refundCheckout(sessionId, 1500).id);
    // Stripe does not promise the order: the second (refunded 25 so far) arrives first.
    await deliver(second);
    assert.equal(await balanceOf(customer.id), usd(25));
    await deliver(first);
    assert.equal(await balanceOf(customer.id), usd(25));
    assert.equal((await ledgerOf(customer.id, 'reversal')).length, 1);
    // The rest refunded later: only the difference.
    await deliver(stripe.event('charge.refunded', stripe.refundCheckout(sessionId).id));
    assert.equal(await balanceOf(customer.id), 0n);
    assert.deepEqual((await ledgerOf(customer.id, 'reversal')).map((e) => e.amountMicros), [usd(25), usd(25)]);
    assert.equal((await topUpOf(topUpId)).reversedMicros, usd(50));
  });

  test('deliveries at the same time, of one event and of another about the same payment, apply once each', async () => {
    const { customer, sessionId, topUpId } = await toppedUp(20);
    const refund = stripe.event('charge.refunded', stripe.refundCheckout(sessionId, 500).id);
    const created = stripe.event('charge.dispute.created', stripe.disputeCheckout(sessionId).id);
    const results = await Promise.all([refund, created, refund, created, refund].map(deliver));
    assert.equal(results.filter((r) => r.applied).length, 2);
    assert.equal(await balanceOf(customer.id), 0n);
    assert.deepEqual((await ledgerOf(customer.id, 'reversal')).map((e) => e.amountMicros).sort(), [usd(15), usd(5)].sort());
    assert.equal((await topUpOf(topUpId)).reversedMicros, usd(20));
  });

  test('never below zero: what the balance cannot cover is alerted to the operator', async () => {
    const { customer, sessionId, topUpId } = await toppedUp(10);
    // The customer spends some of it: one envelope, USD 0.10.
    await createEnvelope(t, { title: 'Spent', recipients: [person('spent')] }, { apiKey: customer.apiKey });
    assert.equal(await balanceOf(customer.id), usd(9.9));

    await deliver(stripe.event('charge.refunded', stripe.refundCheckout(sessionId).id));
    assert.equal(await balanceOf(customer.id), 0n);
    assert.deepEqual((await ledgerOf(customer.id, 'reversal')).map((e) => [e.amountMicros, e.balanceAfterMicros]), [[usd(9.9), 0n]]);
    const top = await topUpOf(topUpId);
    assert.deepEqual([top.reversedMicros, top.unrecoveredMicros], [usd(9.9), usd(0.1)]);
    const [alert] = await alertsOf('card_reversal_unrecovered', topUpId);
    assert.ok(alert, 'an operator alert names the top-up');
    assert.equal(alert.customerId, customer.id);
    assert.match(alert.message, /^charge\.refunded: \$10\.00 of top-up .* should come back, but the balance held \$9\.90; \$0\.10 is not recovered$/);
    assert.deepEqual([(alert.data as Record<string, unknown>).owedCents, (alert.data as Record<string, unknown>).takenCents], [1000, 990]);
  });

  test('a refund of a payment no top-up has is acknowledged, takes nothing and is alerted', async () => {
    const foreign = stripe.addCheckoutSession({ metadata: { order: '42' } });
    stripe.completeCheckout(foreign.id, 'paid');
    const charge = stripe.refundCheckout(foreign.id);
    const reversalsBefore = (await t.container.db.select().from(ledgerEntries).where(eq(ledgerEntries.direction, 'reversal'))).length;
    assert.deepEqual(await deliver(stripe.event('charge.refunded', charge.id)), { received: true, applied: true });
    assert.equal((await t.container.db.select().from(ledgerEntries).where(eq(ledgerEntries.direction, 'reversal'))).length, reversalsBefore);
    const alert = (await alertsOf('card_reversal_unknown_payment', null)).find((a) => (a.data as { paymentIntent: string }).paymentIntent === charge.payment_intent);
    assert.ok(alert);
    assert.match(alert.message, /took back \$10\.00 of payment pi_\w+ \(charge\.refunded\), which no paid top-up has/);
  });
});

describe('charge.dispute.*', () => {
  const disputeEvent = (type: string, id: string, status?: DisputeStatus) => {
    if (status) stripe.setDisputeStatus(id, status);
    return stripe.event(`charge.dispute.${type}`, id);
  };

  test('an open dispute takes the credit once; won gives it back; a late event after that changes nothing', async () => {
    const { customer, sessionId, topUpId } = await toppedUp(25);
    const dispute = stripe.disputeCheckout(sessionId);
    await deliver(disputeEvent('created', dispute.id));
    await deliver(disputeEvent('funds_withdrawn', dispute.id));
    const late = disputeEvent('updated', dispute.id, 'under_review');
    await deliver(late);
    assert.equal(await balanceOf(customer.id), 0n);
    assert.deepEqual((await ledgerOf(customer.id, 'reversal')).map((e) => [e.amountMicros, e.description]), [[usd(25), 'Card top-up disputed']]);

    await deliver(disputeEvent('closed', dispute.id, 'won'));
    await deliver(disputeEvent('funds_reinstated', dispute.id));
    assert.equal(await balanceOf(customer.id), usd(25));
    const restored = (await ledgerOf(customer.id, 'credit')).at(-1)!;
    assert.deepEqual([restored.amountMicros, restored.description], [usd(25), 'Card dispute ended in your favour: top-up restored']);
    const [audit] = await auditOf(topUpId, 'credits.restore');
    assert.deepEqual([(audit.metadata as Record<string, unknown>).restoredCents, (audit.metadata as Record<string, unknown>).status], [2500, 'won']);

    // A won dispute is final: an "under review" event delivered after it does not take the credit again.
    const stale = JSON.parse(late.payload) as { id: string };
    await deliver({ payload: late.payload.replace(stale.id, `${stale.id}_late`) });
    assert.equal(await balanceOf(customer.id), usd(25));
    const [claim] = await t.container.db.select().from(cardReversals).where(eq(cardReversals.stripeObjectId, dispute.id));
    assert.deepEqual([claim.kind, claim.stripeStatus, claim.claimedMicros], ['dispute', 'won', 0n]);
    assert.deepEqual([(await topUpOf(topUpId)).reversedMicros, (await topUpOf(topUpId)).unrecoveredMicros], [0n, 0n]);
  });

  test('a lost dispute keeps the credit taken', async () => {
    const { customer, sessionId } = await toppedUp(10);
    const dispute = stripe.disputeCheckout(sessionId);
    await deliver(disputeEvent('created', dispute.id));
    await deliver(disputeEvent('closed', dispute.id, 'lost'));
    assert.equal(await balanceOf(customer.id), 0n);
    assert.equal((await ledgerOf(customer.id, 'reversal')).length, 1);
    assert.equal((await ledgerOf(customer.id, 'credit')).length, 1, 'only the top-up itself');
  });

  test('an inquiry answered by a refund: the credit is taken once, and stays taken when the inquiry closes', async () => {
    const { customer, sessionId, topUpId } = await toppedUp(25);
    const inquiry = stripe.disputeCheckout(sessionId, { status: 'warning_needs_response' });
    await deliver(disputeEvent('created', inquiry.id));
    assert.equal(await balanceOf(customer.id), 0n);
    await deliver(stripe.event('charge.refunded', stripe.refundCheckout(sessionId).id));
    await deliver(disputeEvent('closed', inquiry.id, 'warning_closed'));
    assert.equal(await balanceOf(customer.id), 0n);
    assert.deepEqual((await ledgerOf(customer.id, 'reversal')).map((e) => e.amountMicros), [usd(25)]);
    assert.equal((await topUpOf(topUpId)).reversedMicros, usd(25));
  });

  test('won after the balance could not cover it: what was not recovered is forgotten, what was taken comes back', async () => {
    const { customer, sessionId, topUpId } = await toppedUp(10);
    await createEnvelope(t, { title: 'Spent', recipients: [person('spent2')] }, { apiKey: customer.apiKey });
    const dispute = stripe.disputeCheckout(sessionId);
    await deliver(disputeEvent('created', dispute.id));
    assert.equal(await balanceOf(customer.id), 0n);
    assert.equal((await alertsOf('card_reversal_unrecovered', topUpId)).length, 1);

    await deliver(disputeEvent('closed', dispute.id, 'won'));
    assert.equal(await balanceOf(customer.id), usd(9.9));
    const top = await topUpOf(topUpId);
    assert.deepEqual([top.reversedMicros, top.unrecoveredMicros], [0n, 0n]);
    const [audit] = await auditOf(topUpId, 'credits.restore');
    assert.deepEqual([(audit.metadata as Record<string, unknown>).restoredCents, (audit.metadata as Record<string, unknown>).forgivenCents], [990, 10]);
  });
});
