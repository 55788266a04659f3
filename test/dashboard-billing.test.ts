/**
 * The dashboard's billing page and card top-ups through Stripe Checkout: the real `stripe` SDK pointed
 * at a local stand-in of Stripe's API (STRIPE_API_URL), Stripe's webhook signed with the SDK's test
 * helper. Starting a top-up (the session Stripe is asked for, the 303 to its page, refused amounts,
 * CSRF, Stripe down), crediting exactly once whatever Stripe delivers, refusing what does not add up,
 * the page (notices, top-ups of this customer only, the usage history's paging), the sweep, and the
 * page without Stripe.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import Stripe from 'stripe';
import { auditLog, cardTopUps, customers, ledgerEntries, operatorAlerts, stripeEvents } from '../src/db/schema/index.js';
import { AppError } from '../src/errors.js';
import { createTestApp, type TestApp } from './harness.js';
import { form, signInDashboard, type DashboardBrowser } from './fixtures/dashboard.js';
import { startStripeStandin, type StripeStandin } from './fixtures/stripe-standin.js';

const SECRET_KEY = 'sk_test_standin0123456789';
const WEBHOOK_SECRET = 'whsec_standin0123456789abcdef';

let t: TestApp;
let stripe: StripeStandin;
let offsetMs = 0;
// Only for signing test events, as Stripe would; it never calls the network.
const signer = new Stripe(SECRET_KEY);

before(async () => {
  stripe = await startStripeStandin({ secretKey: SECRET_KEY });
  t = await createTestApp({
    creditCents: 1000,
    env: { STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_URL: stripe.url },
    overrides: { clock: () => new Date(Date.now() + offsetMs) },
  });
});
after(async () => {
  await t?.close();
  await stripe?.close();
});

/** A new customer with no balance, signed in to the dashboard. */
async function newCustomer(creditCents = 0): Promise<{ id: string; browser: DashboardBrowser }> {
  const c = await t.createCustomer(creditCents);
  return { id: c.id, browser: await signInDashboard(t, c.id) };
}

const page = (b: DashboardBrowser, query = '') => t.app.inject({ url: `/dashboard/billing${query}`, headers: { cookie: b.cookie } });
const startTopUp = (b: DashboardBrowser, fields: Record<string, string>) => t.app.inject({ method: 'POST', url: '/dashboard/billing/top-up', ...form(b, fields) });
const rowsOf = (customerId: string) => t.container.db.select().from(cardTopUps).where(eq(cardTopUps.customerId, customerId));
const balanceOf = async (customerId: string) => (await t.container.db.select().from(customers).where(eq(customers.id, customerId)))[0].balanceMicros;
const creditsOf = (customerId: string) => t.container.db.select().from(ledgerEntries).where(and(eq(ledgerEntries.customerId, customerId), eq(ledgerEntries.direction, 'credit')));
const alertsFor = (kind: string) => t.container.db.select().from(operatorAlerts).where(eq(operatorAlerts.kind, kind));

/** Starts a top-up through the page and answers the Checkout Session the stand-in made for it. */
async function started(b: DashboardBrowser, fields: Record<string, string>) {
  const res = await startTopUp(b, fields);
  assert.equal(res.statusCode, 303, res.body);
  const location = String(res.headers.location);
  const m = new RegExp(`^${stripe.url}/checkout/(cs_test_[0-9a-f]+)$`).exec(location);
  assert.ok(m, `redirected to the stand-in's checkout page, got ${location}`);
  return stripe.checkoutSessions.get(m[1])!;
}

/** Posts an event as Stripe does: the exact JSON text, signed over those bytes. */
function deliver(payload: string, signature = signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET })) {
  return t.app.inject({ method: 'POST', url: '/webhooks/stripe', headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature }, payload });
}

describe('GET /dashboard/billing', () => {
  test('shows the balance, the sandbox allowance and the top-up form; its CSP lets the form reach Checkout', async () => {
    const b = await signInDashboard(t);
    const res = await page(b);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /<h1>Billing<\/h1>/);
    assert.match(res.body, /<span class="value">\$10\.00<\/span>/);
    assert.match(res.body, /<span class="value">0 \/ 100<\/span>/);
    assert.match(res.body, /<a href="\/dashboard\/billing" aria-current="page">Billing<\/a>/);
    assert.match(res.body, /<form method="post" action="\/dashboard\/billing\/top-up" class="top-up">\s*<input type="hidden" name="_csrf" value="[^"]+">/);
    for (const a of [10, 25, 50, 100]) assert.match(res.body, new RegExp(`<label><input type="radio" name="amount" value="${a}"[^>]*> \\$${a}</label>`));
    assert.match(res.body, /<label for="custom-amount">Or another amount in whole US dollars\s*<input type="number" id="custom-amount" name="customAmount" min="5" max="10000"/);
    assert.match(res.body, /No card top-ups yet/);
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, new RegExp(`form-action 'self' https://checkout\\.stripe\\.com ${stripe.url.replace(/[.]/g, '\\.')}(;|$)`));
    assert.match(csp, /script-src 'self'/);
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  test('without a session it sends the browser to sign in and back', async () => {
    const res = await t.app.inject({ url: '/dashboard/billing?offset=20' });
    assert.equal(res.statusCode, 303);
    assert.equal(res.headers.location, `/dashboard/sign-in?returnTo=${encodeURIComponent('/dashboard/billing?offset=20')}`);
  });

  test("Stripe's return shows a fixed notice; anything else in ?topup= shows nothing and is never echoed", async () => {
    const b = await signInDashboard(t);
    assert.match((await page(b, '?topup=success')).body, /<p class="flash ok" role="status">Thank you: your payment went through\./);
    assert.match((await page(b, '?topup=cancelled')).body, /<p class="flash error" role="alert">The top-up was cancelled: nothing was charged\.<\/p>/);
    const odd = await page(b, `?topup=${encodeURIComponent('<b>x</b>')}`);
    assert.equal(odd.statusCode, 200);
    assert.doesNotMatch(odd.body, /class="flash|<b>x<\/b>|&lt;b&gt;/);
    assert.equal((await page(b, '?topup=constructor')).body.includes('class="flash'), false);
  });

  test("is INSUFFICIENT_BALANCE's topUpUrl", async () => {
    const c = await newCustomer(0);
    const err = await t.container.services.billing
      .assertAffordable({ actor: { customerId: c.id, mode: 'live', via: 'api_key', keyId: null }, operation: 'envelope_create', testModeHeader: false })
      .then(() => undefined, (e: AppError) => e);
    assert.ok(err instanceof AppError && err.code === 'INSUFFICIENT_BALANCE');
    const topUpUrl = String(err.extras.topUpUrl);
    assert.equal(topUpUrl, `${t.config.dashboardUrl}/billing`);
    assert.equal((await page(c.browser, '')).statusCode, 200);
    assert.equal(new URL(topUpUrl).pathname, '/dashboard/billing');
  });
});

describe('POST /dashboard/billing/top-up', () => {
  test("opens a Checkout Session for the chosen amount and sends the browser to Stripe's page", async () => {
    const c = await newCustomer();
    const session = await started(c.browser, { amount: '50' });
    const [row] = await rowsOf(c.id);
    assert.deepEqual([row.status, row.amountMicros, row.checkoutSessionId, row.ledgerEntryId], ['pending', 50_000_000n, session.id, null]);

    assert.deepEqual(session.line_item, { name: 'Signet balance top-up', unitAmount: 5000, quantity: 1, currency: 'usd' });
    assert.deepEqual([session.mode, session.amount_total, session.currency], ['payment', 5000, 'usd']);
    assert.deepEqual(session.metadata, { topUpId: row.id, customerId: c.id });
    assert.equal(session.client_reference_id, c.id);
    const [customer] = await t.container.db.select().from(customers).where(eq(customers.id, c.id));
    assert.equal(session.customer_email, customer.email);
    assert.equal(session.success_url, 'http://signet.test/dashboard/billing?topup=success');
    assert.equal(session.cancel_url, 'http://signet.test/dashboard/billing?topup=cancelled');
    const call = stripe.requests.at(-1)!;
    assert.deepEqual([call.method, call.path, call.authorization, call.idempotencyKey], ['POST', '/v1/checkout/sessions', `Bearer ${SECRET_KEY}`, row.id]);

    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, row.id), eq(auditLog.action, 'card_top_up.start')));
    assert.equal(audit.length, 1);
    assert.deepEqual([audit[0].customerId, audit[0].actorType, (audit[0].metadata as { amountCents: number }).amountCents], [c.id, 'session', 5000]);
    const shown = await page(c.browser);
    assert.match(shown.body, /\$50\.00<\/td><td data-label="Status"><span class="badge wait">Waiting for payment<\/span>/);
  });

  test('another amount, in whole dollars, wins over the preset', async () => {
    const c = await newCustomer();
    const session = await started(c.browser, { amount: '25', customAmount: ' 37 ' });
    assert.equal(session.amount_total, 3700);
    assert.equal((await rowsOf(c.id))[0].amountMicros, 37_000_000n);
    assert.equal((await started(c.browser, { customAmount: '10000' })).amount_total, 1_000_000);
    assert.equal((await started(c.browser, { amount: '100', customAmount: '' })).amount_total, 10_000);
  });

  test('an amount that is no preset, not whole dollars, or outside 5..10,000 is refused on the page; Stripe is not called', async () => {
    const c = await newCustomer();
    const calls = stripe.requests.length;
    const cases: [Record<string, string>, RegExp][] = [
      [{ amount: '15' }, /Choose one of the amounts or enter another one/],
      [{}, /Choose one of the amounts or enter another one/],
      [{ amount: '25', customAmount: '4' }, /Choose an amount between \$5 and \$10,000/],
      [{ customAmount: '10001' }, /Choose an amount between \$5 and \$10,000/],
      [{ customAmount: '0' }, /Choose an amount between \$5 and \$10,000/],
      [{ customAmount: '12.50' }, /Enter a whole number of US dollars/],
      [{ customAmount: '-5' }, /Enter a whole number of US dollars/],
      [{ customAmount: '1e3' }, /Enter a whole number of US dollars/],
      [{ customAmount: '<script>' }, /Enter a whole number of US dollars/],
    ];
    for (const [fields, message] of cases) {
      const res = await startTopUp(c.browser, fields);
      assert.equal(res.statusCode, 400, `${JSON.stringify(fields)}: ${res.body}`);
      assert.match(res.body, new RegExp(`<p class="flash error" role="alert">${message.source}`), JSON.stringify(fields));
      assert.match(res.body, /action="\/dashboard\/billing\/top-up"/, 'the form is shown again');
      assert.doesNotMatch(res.body, /<script>/);
    }
    assert.equal(stripe.requests.length, calls);
    assert.deepEqual(await rowsOf(c.id), []);
  });

  test('an account can start at most ten top-ups an hour: the eleventh is 429 and never reaches Stripe', async () => {
    const c = await newCustomer();
    for (let i = 0; i < 10; i++) await started(c.browser, { amount: '10' });
    const calls = stripe.requests.length;
    const res = await startTopUp(c.browser, { amount: '10' });
    assert.equal(res.statusCode, 429, res.body);
    assert.equal(res.headers['retry-after'], '3600');
    assert.match(res.body, /At most 10 top-ups can be started in an hour/);
    assert.equal(stripe.requests.length, calls);
    assert.equal((await rowsOf(c.id)).length, 10);
  });

  test('without the CSRF token (or with another browser\'s) it is refused and nothing starts', async () => {
    const c = await newCustomer();
    const other = await newCustomer();
    const calls = stripe.requests.length;
    const bare = await t.app.inject({
      method: 'POST',
      url: '/dashboard/billing/top-up',
      headers: { cookie: c.browser.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'amount=25',
    });
    assert.equal(bare.statusCode, 403);
    assert.match(bare.body, /CSRF_TOKEN_INVALID/);
    const foreign = await t.app.inject({ method: 'POST', url: '/dashboard/billing/top-up', ...form({ ...c.browser, csrf: other.browser.csrf }, { amount: '25' }) });
    assert.equal(foreign.statusCode, 403);
    assert.equal(stripe.requests.length, calls);
    assert.deepEqual(await rowsOf(c.id), []);
  });

  test('without a session it is 401 and nothing starts', async () => {
    const c = await newCustomer();
    const res = await t.app.inject({ method: 'POST', url: '/dashboard/billing/top-up', ...form({ ...c.browser, cookie: `svc_csrf=${c.browser.csrfKey}` }, { amount: '25' }) });
    assert.equal(res.statusCode, 401);
    assert.deepEqual(await rowsOf(c.id), []);
  });

  test('Stripe down is a 503 page; the row stays pending without a session; the next try works', async () => {
    const c = await newCustomer();
    stripe.down = true;
    let res;
    try {
      res = await startTopUp(c.browser, { amount: '10' });
    } finally {
      stripe.down = false;
    }
    assert.equal(res.statusCode, 503, res.body);
    assert.match(res.body, /<p class="flash error" role="alert">Card payments did not answer \([A-Za-z]+ 500\); nothing was charged; try again in a few minutes<\/p>/);
    assert.doesNotMatch(res.body, new RegExp(SECRET_KEY));
    const [row] = await rowsOf(c.id);
    assert.deepEqual([row.status, row.checkoutSessionId], ['pending', null]);
    // The SDK's retry carried our key: Stripe would have opened one session at most.
    const tries = stripe.requests.filter((r) => r.idempotencyKey === row.id);
    assert.ok(tries.length >= 1 && tries.every((r) => r.path === '/v1/checkout/sessions'));
    assert.doesNotMatch((await page(c.browser)).body, /Waiting for payment/, 'a top-up that never reached Stripe is not listed');

    const session = await started(c.browser, { amount: '10' });
    assert.equal(session.amount_total, 1000);
    assert.equal((await rowsOf(c.id)).length, 2);
  });
});

describe('Stripe events: crediting a top-up exactly once', () => {
  test('checkout.session.completed (paid) delivered twice credits once, with a ledger row and an audit row', async () => {
    const c = await newCustomer();
    const session = await started(c.browser, { amount: '25' });
    stripe.completeCheckout(session.id, 'paid');
    const event = stripe.event('checkout.session.completed', session.id);

    const first = await deliver(event.payload);
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(first.json(), { received: true, applied: true });
    const again = await deliver(event.payload);
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json(), { received: true, applied: false });

    assert.equal(await balanceOf(c.id), 25_000_000n);
    const credits = await creditsOf(c.id);
    assert.equal(credits.length, 1);
    assert.deepEqual([credits[0].amountMicros, credits[0].balanceAfterMicros, credits[0].description], [25_000_000n, 25_000_000n, 'Card top-up']);
    const [row] = await rowsOf(c.id);
    assert.deepEqual([row.status, row.ledgerEntryId], ['paid', credits[0].id]);
    assert.ok(row.paidAt);
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, row.id), eq(auditLog.action, 'credits.top_up')));
    assert.equal(audit.length, 1);
    assert.deepEqual([audit[0].customerId, audit[0].actorType, audit[0].resourceType], [c.id, 'system', 'card_top_up']);
    assert.deepEqual(audit[0].metadata, { amountCents: 2500, checkoutSessionId: session.id, ledgerEntryId: credits[0].id, eventType: 'checkout.session.completed' });
    assert.equal((await t.container.db.select().from(stripeEvents).where(eq(stripeEvents.id, event.id))).length, 1);

    const shown = (await page(c.browser)).body;
    assert.match(shown, /<span class="value">\$25\.00<\/span>/);
    assert.match(shown, /<span class="badge good">Paid<\/span>/);
    assert.match(shown, /<td data-label="Amount"><span class="badge good">\+\$25\.00<\/span><\/td><td data-label="Description"><span title="Card top-up">Card top-up<\/span><\/td><td data-label="Envelope">—<\/td>/);
  });

  test('completed while an async payment settles credits nothing; async_payment_succeeded then credits once', async () => {
    const c = await newCustomer();
    const session = await started(c.browser, { amount: '100' });
    stripe.completeCheckout(session.id, 'unpaid');
    const completed = stripe.event('checkout.session.completed', session.id);
    assert.deepEqual((await deliver(completed.payload)).json(), { received: true, applied: true });
    assert.equal(await balanceOf(c.id), 0n);
    assert.equal((await rowsOf(c.id))[0].status, 'pending');

    stripe.settleAsync(session.id, true);
    const succeeded = stripe.event('checkout.session.async_payment_succeeded', session.id);
    assert.deepEqual((await deliver(succeeded.payload)).json(), { received: true, applied: true });
    assert.equal(await balanceOf(c.id), 100_000_000n);
    // Redeliveries, and a late completed event that now reads paid: still once.
    await deliver(succeeded.payload);
    await deliver(completed.payload);
    assert.deepEqual((await deliver(stripe.event('checkout.session.completed', session.id).payload)).json(), { received: true, applied: true });
    assert.equal(await balanceOf(c.id), 100_000_000n);
    assert.equal((await creditsOf(c.id)).length, 1);
    assert.equal((await rowsOf(c.id))[0].status, 'paid');
  });

  test('a bad signature is refused: nothing recorded, nothing credited', async () => {
    const c = await newCustomer();
    const session = await started(c.browser, { amount: '10' });
    stripe.completeCheckout(session.id, 'paid');
    const event = stripe.event('checkout.session.completed', session.id);
    const forged = signer.webhooks.generateTestHeaderString({ payload: event.payload, secret: 'whsec_someoneelse0123456789' });
    for (const signature of [forged, 't=1,v1=00', '']) {
      const res = await deliver(event.payload, signature);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'STRIPE_SIGNATURE_INVALID');
    }
    const tampered = event.payload.replace('"amount_total":1000', '"amount_total":100000');
    assert.equal((await deliver(tampered, signer.webhooks.generateTestHeaderString({ payload: event.payload, secret: WEBHOOK_SECRET }))).statusCode, 400);
    assert.equal(await balanceOf(c.id), 0n);
    assert.equal((await t.container.db.select().from(stripeEvents).where(eq(stripeEvents.id, event.id))).length, 0);
  });

  test("a paid amount that differs from the top-up's credits nothing and alerts the operator", async () => {
    const c = await newCustomer();
    const session = await started(c.browser, { amount: '50' });
    stripe.completeCheckout(session.id, 'paid');
    session.amount_total = 500;
    const res = await deliver(stripe.event('checkout.session.completed', session.id).payload);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(await balanceOf(c.id), 0n);
    const [row] = await rowsOf(c.id);
    assert.equal(row.status, 'pending');
    const alert = (await alertsFor('card_top_up_amount_mismatch')).find((a) => a.resourceId === row.id);
    assert.ok(alert, 'an operator alert names the top-up');
    assert.equal(alert.customerId, c.id);
    assert.match(alert.message, /paid 500 usd but top-up .* is 5000 usd cents: nothing was credited/);
  });

  test('metadata naming another top-up credits nothing and alerts', async () => {
    const c = await newCustomer();
    const other = await newCustomer();
    const session = await started(c.browser, { amount: '10' });
    const otherSession = await started(other.browser, { amount: '10' });
    stripe.completeCheckout(session.id, 'paid');
    session.metadata = { ...otherSession.metadata };
    await deliver(stripe.event('checkout.session.completed', session.id).payload);
    assert.equal(await balanceOf(c.id), 0n);
    assert.equal(await balanceOf(other.id), 0n);
    const [row] = await rowsOf(c.id);
    assert.ok((await alertsFor('card_top_up_mismatch')).some((a) => a.resourceId === row.id));
  });

  test('a paid session with no top-up is acknowledged, credits nothing and alerts', async () => {
    const foreign = stripe.addCheckoutSession({ metadata: { order: '42' } });
    stripe.completeCheckout(foreign.id, 'paid');
    const ledgerBefore = (await t.container.db.select().from(ledgerEntries)).length;
    const res = await deliver(stripe.event('checkout.session.completed', foreign.id).payload);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { received: true, applied: true });
    assert.equal((await t.container.db.select().from(ledgerEntries)).length, ledgerBefore);
    const alert = (await alertsFor('card_top_up_unknown_session')).find((a) => (a.data as { checkoutSessionId: string }).checkoutSessionId === foreign.id);
    assert.ok(alert);
    assert.equal(alert.customerId, null);
  });

  test('expired and async_payment_failed mark the top-up expired and credit nothing', async () => {
    const c = await newCustomer();
    const abandoned = await started(c.browser, { amount: '10' });
    stripe.expireCheckout(abandoned.id);
    await deliver(stripe.event('checkout.session.expired', abandoned.id).payload);

    const bounced = await started(c.browser, { amount: '25' });
    stripe.completeCheckout(bounced.id, 'unpaid');
    stripe.settleAsync(bounced.id, false);
    await deliver(stripe.event('checkout.session.async_payment_failed', bounced.id).payload);

    assert.deepEqual((await rowsOf(c.id)).map((r) => r.status), ['expired', 'expired']);
    assert.equal(await balanceOf(c.id), 0n);
    assert.equal((await page(c.browser)).body.match(/<span class="badge bad">Not completed<\/span>/g)?.length, 2);
  });
});

describe('the page shows this customer only, and pages the usage history', () => {
  test("another customer's top-ups are not shown", async () => {
    const a = await newCustomer();
    const b = await newCustomer();
    await started(a.browser, { customAmount: '777' });
    const mine = await page(a.browser);
    assert.match(mine.body, /\$777\.00/);
    const theirs = await page(b.browser);
    assert.doesNotMatch(theirs.body, /777/);
    assert.match(theirs.body, /No card top-ups yet/);
  });

  test('the usage history: 20 a page, Previous and Next links, a chosen page size', async () => {
    const c = await newCustomer();
    for (let i = 1; i <= 25; i++) {
      await t.container.db.transaction((tx) =>
        t.container.services.billing.credit(tx, { customerId: c.id, micros: BigInt(i) * 10_000n, direction: 'credit', description: `Grant ${String(i).padStart(2, '0')}` }),
      );
    }
    const rows = (html: string) => html.match(/<span title="Grant \d\d">Grant \d\d<\/span>/g)?.length ?? 0;
    const first = (await page(c.browser)).body;
    assert.equal(rows(first), 20);
    assert.match(first, /<a href="\/dashboard\/billing\?limit=20&amp;offset=20#usage" rel="next">Next →<\/a>/);
    assert.match(first, /<span aria-disabled="true">← Previous<\/span>/);
    assert.match(first, /1–20 of 25/);

    const second = (await page(c.browser, '?limit=20&offset=20')).body;
    assert.equal(rows(second), 5);
    assert.match(second, /<a href="\/dashboard\/billing\?limit=20&amp;offset=0#usage" rel="prev">← Previous<\/a>/);
    assert.doesNotMatch(second, /rel="next"/);
    assert.match(second, /21–25 of 25/);

    const middle = (await page(c.browser, '?limit=10&offset=10')).body;
    assert.equal(rows(middle), 10);
    assert.match(middle, /11–20 of 25/);
    assert.match(middle, /offset=0#usage" rel="prev"/);
    assert.match(middle, /offset=20#usage" rel="next"/);

    // A hand-edited link falls back to the defaults rather than an error page.
    for (const bad of ['?limit=0', '?limit=101', '?offset=-1', '?limit=abc&offset=x']) {
      const res = await page(c.browser, bad);
      assert.equal(res.statusCode, 200, bad);
      assert.match(res.body, /1–20 of 25/, bad);
    }
    const empty = await newCustomer();
    assert.match((await page(empty.browser)).body, /No charges or credits yet/);
  });
});

describe('the sweep', () => {
  test('expires a top-up that never reached Stripe after an hour and an unsettled one after a week; Stripe paying later still credits', async () => {
    const c = await newCustomer();
    stripe.down = true;
    try {
      assert.equal((await startTopUp(c.browser, { amount: '10' })).statusCode, 503);
    } finally {
      stripe.down = false;
    }
    const session = await started(c.browser, { amount: '25' });
    const sweep = () => t.container.db.transaction((tx) => t.container.topUps.expireStale(tx));
    const statusById = async () => Object.fromEntries((await rowsOf(c.id)).map((r) => [r.checkoutSessionId ?? 'unsent', r.status]));

    await sweep();
    assert.deepEqual(await statusById(), { unsent: 'pending', [session.id]: 'pending' });
    offsetMs = 2 * 3_600_000;
    try {
      await sweep();
      assert.deepEqual(await statusById(), { unsent: 'expired', [session.id]: 'pending' });
      offsetMs = 8 * 24 * 3_600_000;
      await sweep();
      assert.deepEqual(await statusById(), { unsent: 'expired', [session.id]: 'expired' });
    } finally {
      offsetMs = 0;
    }
    stripe.completeCheckout(session.id, 'unpaid');
    stripe.settleAsync(session.id, true);
    await deliver(stripe.event('checkout.session.async_payment_succeeded', session.id).payload);
    assert.equal(await balanceOf(c.id), 25_000_000n);
    assert.equal((await statusById())[session.id], 'paid');
  });
});

describe('without Stripe', () => {
  let bare: TestApp;
  before(async () => {
    bare = await createTestApp({ creditCents: 0 });
  });
  after(async () => {
    await bare?.close();
  });

  test('the page says card payments are off and how an operator credits the balance', async () => {
    const b = await signInDashboard(bare);
    const res = await bare.app.inject({ url: '/dashboard/billing', headers: { cookie: b.cookie } });
    assert.equal(res.statusCode, 200, res.body);
    const id = bare.customer.id;
    assert.match(res.body, /Card payments are not set up on this server\. An operator can credit your balance/);
    assert.match(res.body, new RegExp(`<code id="account-id" class="secret">${id}</code>`));
    assert.ok(res.body.includes(`<pre><code>npx signet ops credits add ${id} --amount-cents 2500 --reason "Invoice 1042"</code></pre>`));
    assert.match(res.body, new RegExp(`POST /ops/customers/${id}/credits`));
    assert.doesNotMatch(res.body, /action="\/dashboard\/billing\/top-up"/);

    const post = await bare.app.inject({ method: 'POST', url: '/dashboard/billing/top-up', ...form(b, { amount: '25' }) });
    assert.equal(post.statusCode, 404);
    assert.match(post.body, /Card top-ups are not configured on this server/);
    assert.equal((await bare.container.db.select().from(cardTopUps)).length, 0);
  });

  test('a Stripe key without the webhook secret leaves card top-ups off: nothing could credit the payment', async () => {
    const half = await createTestApp({ env: { STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_API_URL: stripe.url } });
    try {
      const b = await signInDashboard(half);
      const res = await half.app.inject({ url: '/dashboard/billing', headers: { cookie: b.cookie } });
      assert.match(res.body, /Card payments are not set up on this server/);
      const calls = stripe.requests.length;
      assert.equal((await half.app.inject({ method: 'POST', url: '/dashboard/billing/top-up', ...form(b, { amount: '25' }) })).statusCode, 404);
      assert.equal(stripe.requests.length, calls);
    } finally {
      await half.close();
    }
  });
});
