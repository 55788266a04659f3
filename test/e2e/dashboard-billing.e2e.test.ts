// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
/**
 * A card top-up in a real Chromium against the real server: the billing page (signed in with a real
 * session cookie), a preset chosen and submitted, the redirect to the Stripe stand-in's Checkout page
 * (allowed by the page's CSP form-action), Pay, back to the success notice; then Stripe's signed event
 * and the new balance. The page at 1280 and 375 px: no horizontal overflow, no CSP refusals or script
 * errors, axe-core with no serious or critical violations; screenshots in test-artifacts/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrowserContextOptions, Page } from 'playwright-core';
import Stripe from 'stripe';
import { createTestApp, type TestApp } from '../harness.js';
import { signInDashboard, type DashboardBrowser } from '../fixtures/dashboard.js';
import { startStripeStandin, type StripeStandin } from '../fixtures/stripe-standin.js';
import { artifactPath, assertPageFitsAndIsAccessible, freePort, launchChromium, watchPage } from './helpers.js';

const SECRET_KEY = 'sk_test_standin0123456789';
const WEBHOOK_SECRET = 'whsec_standin0123456789abcdef';
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 900 } };
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

describe('card top-up in Chromium', () => {
  let t: TestApp;
  let stripe: StripeStandin;
  let base: string;
  let signedIn: DashboardBrowser;
  const signer = new Stripe(SECRET_KEY);
  const browsers: { close: () => Promise<void> }[] = [];

  before(async () => {
    stripe = await startStripeStandin({ secretKey: SECRET_KEY });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({
      creditCents: 1234,
      env: { PUBLIC_URL: base, STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_URL: stripe.url },
    });
    await t.app.listen({ host: '127.0.0.1', port });
    signedIn = await signInDashboard(t);
    // A few ledger rows so the usage history has something to show.
    for (const [cents, description] of [
      [500, 'Promotional credit'],
      [250, 'Refund: envelope "Quarterly services agreement with a rather long title"'],
    ] as const) {
      await t.container.db.transaction((tx) => t.container.services.billing.credit(tx, { customerId: t.customer.id, micros: BigInt(cents) * 10_000n, direction: 'credit', description }));
    }
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
    await stripe?.close();
  });

  /** A signed-in browser (the session and CSRF cookies a sign-in leaves) watching for CSP refusals and script errors. */
  async function newPage(options: BrowserContextOptions): Promise<{ page: Page; problems: string[] }> {
    const browser = await launchChromium(options);
    browsers.push(browser);
    await browser.context.addCookies([
      { name: 'svc_session', value: signedIn.sessionToken, url: base, httpOnly: true, sameSite: 'Lax' },
      { name: 'svc_csrf', value: signedIn.csrfKey, url: base, httpOnly: true, sameSite: 'Lax' },
    ]);
    const page = await browser.context.newPage();
    return { page, problems: await watchPage(page, '/dashboard') };
  }

  test('choose $50, pay on the Checkout page, come back to the notice; the signed event credits the balance', async () => {
    const { page, problems } = await newPage(DESKTOP);
    await page.goto(`${base}/dashboard/billing`);
    await page.getByRole('heading', { name: 'Billing', level: 1 }).waitFor();
    assert.equal(await page.locator('.stats .value').first().textContent(), '$19.84');
    await assertPageFitsAndIsAccessible(page, 'billing', 1280);
    await page.screenshot({ path: artifactPath('billing-topup-1280.png'), fullPage: true });

    // Keyboard: the preset is a labelled radio; the button submits the form.
    await page.getByLabel('$50', { exact: true }).check();
    await Promise.all([page.waitForURL(new RegExp(`^${stripe.url}/checkout/cs_test_`)), page.getByRole('button', { name: 'Continue to payment' }).press('Enter')]);
    const sessionId = new URL(page.url()).pathname.split('/').pop()!;
    assert.equal(stripe.checkoutSessions.get(sessionId)?.amount_total, 5000);
    await page.screenshot({ path: artifactPath('billing-topup-checkout-standin.png') });

    await Promise.all([page.waitForURL(`${base}/dashboard/billing?topup=success`), page.getByRole('button', { name: 'Pay $50.00' }).click()]);
    await page.getByRole('status').filter({ hasText: 'Thank you: your payment went through.' }).waitFor();
    assert.match((await page.locator('table').first().textContent()) ?? '', /\$50\.00\s*Waiting for payment/);

    const { payload } = stripe.event('checkout.session.completed', sessionId);
    const res = await fetch(`${base}/webhooks/stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) },
      body: payload,
    });
    assert.equal(res.status, 200, await res.text());

    await page.goto(`${base}/dashboard/billing`);
    assert.equal(await page.locator('.stats .value').first().textContent(), '$69.84');
    assert.match((await page.locator('table').first().textContent()) ?? '', /\$50\.00\s*Paid/);
    await page.getByRole('cell', { name: 'Card top-up' }).waitFor();
    await page.screenshot({ path: artifactPath('billing-topup-paid-1280.png'), fullPage: true });
    assert.deepEqual(problems, []);
  });

  test('cancelling on the Checkout page comes back to the cancelled notice', async () => {
    const { page, problems } = await newPage(DESKTOP);
    await page.goto(`${base}/dashboard/billing`);
    await page.getByLabel('Or another amount in whole US dollars').fill('40');
    await Promise.all([page.waitForURL(new RegExp(`^${stripe.url}/checkout/`)), page.getByRole('button', { name: 'Continue to payment' }).click()]);
    await page.getByText('Total $40.00').waitFor();
    await Promise.all([page.waitForURL(`${base}/dashboard/billing?topup=cancelled`), page.getByRole('link', { name: 'Cancel and go back' }).click()]);
    await page.getByRole('alert').filter({ hasText: 'The top-up was cancelled: nothing was charged.' }).waitFor();
    assert.deepEqual(problems, []);
  });

  test('at 375 px the page fits the screen and stays usable', async () => {
    const { page, problems } = await newPage(PHONE);
    await page.goto(`${base}/dashboard/billing?topup=success`);
    await page.getByRole('heading', { name: 'Billing', level: 1 }).waitFor();
    await assertPageFitsAndIsAccessible(page, 'billing', 375);
    await page.screenshot({ path: artifactPath('billing-topup-375.png'), fullPage: true });
    assert.deepEqual(problems, []);
  });
});
