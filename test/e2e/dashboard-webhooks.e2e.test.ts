// test-lane: once (pages in Chromium; the routes behind them run on both stores in dashboard-webhooks-keys.test.ts and webhooks-manual.test.ts)
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { bearer, createTestApp, type TestApp } from '../harness.js';
import { signInDashboard } from '../fixtures/dashboard.js';
import { createEnvelope, signer } from '../fixtures/envelopes.js';
import { startReceiver, type Receiver } from '../fixtures/receiver.js';
import { assertPageFitsAndIsAccessible, freePort, launchChromium } from './helpers.js';

const WIDTHS = [1280, 375] as const;
/** Screenshots for a person to look at (the issue asks for them); outside the repository. */
const SHOTS = process.env.SHOTS_DIR ?? '/tmp/shots-h-hooks';

/**
 * The webhooks page in a real Chromium, by keyboard where a person would use it: add an endpoint on a
 * local receiver, send a test event and see it arrive, redeliver it, edit, delete; the live/test switch
 * with counts; and every dashboard page at 375 px with its tables as stacked rows and nothing wider than
 * the screen (plus axe-core, at 1280 px too).
 */
describe('the webhooks page in Chromium', () => {
  let t: TestApp;
  let base: string;
  let receiver: Receiver;
  let context: BrowserContext;
  let close: () => Promise<void>;
  const problems: string[] = [];

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_URL: base, WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
    await t.app.listen({ host: '127.0.0.1', port });
    await t.container.worker.start();
    receiver = await startReceiver();
    const browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    ({ context, close } = browser);
    const { sessionToken } = await signInDashboard(t);
    await context.addCookies([{ name: 'svc_session', value: sessionToken, url: base, httpOnly: true, sameSite: 'Lax' }]);
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
    });
    context.on('console', (msg) => {
      if (msg.type() === 'error' && !/status of (400|409)/.test(msg.text())) problems.push(`${msg.page()?.url()}: ${msg.text()}`);
    });
  });

  after(async () => {
    await close?.().catch(() => {});
    await t?.close();
    await receiver?.close();
  });

  async function waitForDeliveryDone(page: Page): Promise<void> {
    for (let i = 0; i < 100; i++) {
      await page.reload();
      if (await page.getByRole('button', { name: /^Redeliver/ }).count()) return;
      await page.waitForTimeout(100);
    }
    throw new Error('no finished delivery on the page');
  }

  test('add an endpoint, send a test event, redeliver it, edit and delete it', async () => {
    // Three test endpoints: a new account lands on them, and the switch says so.
    for (let i = 0; i < 3; i++) await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(t.customer.testApiKey), payload: { url: receiver.url(`/test-${i}`), events: ['*'] } });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/webhooks`);
    assert.equal(await page.getByRole('link', { name: 'Test (3)' }).getAttribute('aria-current'), 'page');
    assert.ok(await page.getByText('Showing test webhook endpoints').isVisible());
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await assertPageFitsAndIsAccessible(page, 'webhooks, test side', width);
      await page.screenshot({ path: `${SHOTS}/webhooks-switch-test-${width}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.getByRole('link', { name: 'Live (0)' }).click();
    await page.waitForURL(/mode=live/);

    // Add: by keyboard. With no endpoint yet the form is open; the summary still toggles it from the keyboard.
    const summary = page.getByText('Add an endpoint');
    await summary.focus();
    await page.keyboard.press('Enter');
    assert.equal(await page.locator('details.webhook-form').first().getAttribute('open'), null, 'Enter on the summary closes it');
    await page.keyboard.press('Enter');
    await page.getByLabel('Endpoint URL').fill(receiver.url('/live'));
    await page.getByLabel('Description').fill('Order system');
    await page.getByLabel('envelope.completed').check();
    await page.getByLabel('Description').press('Enter');
    await page.waitForLoadState();
    assert.match(await page.locator('#new-secret').innerText(), /^whsec_[0-9a-f]{32}$/);
    await assertPageFitsAndIsAccessible(page, 'webhooks, secret shown', 1280);
    await page.screenshot({ path: `${SHOTS}/webhooks-created-1280.png`, fullPage: true });

    // Test event: it arrives at the receiver, signed as a ping.
    await page.goto(`${base}/dashboard/webhooks?mode=live`);
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.waitForURL(/done=test/);
    const [ping] = await receiver.waitFor(1);
    assert.equal(ping.path, '/live');
    assert.equal(ping.headers['x-service-event'], 'ping');
    await waitForDeliveryDone(page);

    // Redeliver by keyboard: a second request with a new delivery id.
    await page.getByRole('button', { name: /^Redeliver/ }).first().focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/done=redelivered/);
    const got = await receiver.waitFor(2);
    assert.equal(got[1].path, '/live');
    assert.notEqual(got[1].headers['x-service-delivery-id'], got[0].headers['x-service-delivery-id']);
    await waitForDeliveryDone(page);
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await assertPageFitsAndIsAccessible(page, 'webhooks with deliveries', width);
      await page.screenshot({ path: `${SHOTS}/webhooks-deliveries-${width}.png`, fullPage: true });
    }
    // At 375 px the response code is on screen without scrolling sideways.
    await page.setViewportSize({ width: 375, height: 900 });
    const code = page.locator('td[data-label="Response"] code').first();
    const box = await code.boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 375, `the response code is at ${JSON.stringify(box)}`);
    await page.setViewportSize({ width: 1280, height: 900 });

    // Edit: a new description, kept enabled.
    await page.getByText('Edit', { exact: true }).click();
    for (const width of [375, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      await assertPageFitsAndIsAccessible(page, 'webhooks, edit form open', width);
      await page.screenshot({ path: `${SHOTS}/webhooks-edit-${width}.png`, fullPage: true });
    }
    const edit = page.locator('article.webhook form[action$="/dashboard/webhooks/' + (await hookId()) + '"]');
    await edit.getByLabel('Description').fill('Order system v2');
    await edit.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(/done=updated/);
    assert.ok(await page.getByText('Order system v2').first().isVisible());
    assert.ok(await page.getByText('Endpoint saved.').isVisible());

    // Delete: after the browser's confirmation.
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(/done=deleted/);
    assert.ok(await page.getByText('No webhook endpoints').isVisible());
    assert.ok(await page.getByRole('link', { name: 'Live (0)' }).isVisible());
    assert.deepEqual(problems, []);
    await page.close();
  });

  async function hookId(): Promise<string> {
    const res = await t.app.inject({ url: '/v1/webhooks', headers: bearer(t.customer.apiKey) });
    return res.json().data[0].id;
  }

  test('every dashboard page at 375 px: stacked rows, no sideways scrolling, axe-clean', async () => {
    // Something in every table: a labelled key, an envelope with recipients, a webhook with deliveries.
    const env = await createEnvelope(t, { title: 'A contract with a rather long title for a phone', recipients: [signer(1), signer(2)] });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/keys`);
    await page.getByLabel('Label', { exact: false }).first().fill('CI runner on the build server');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.waitForLoadState();
    const pages = ['/dashboard', '/dashboard/keys', '/dashboard/billing', '/dashboard/envelopes', `/dashboard/envelopes/${env.envelopeId}`, '/dashboard/webhooks?mode=test', '/dashboard/products', '/dashboard/settings'];
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      for (const path of pages) {
        await page.goto(`${base}${path}`);
        const name = path.replace(/^\/dashboard\/?/, '').replace(/[^a-z0-9]+/gi, '-').replace(/-[0-9a-f]{8}-.*$/, '-detail') || 'overview';
        await assertPageFitsAndIsAccessible(page, path, width);
        await page.screenshot({ path: `${SHOTS}/page-${name}-${width}.png`, fullPage: true });
        if (width === 375) {
          // Stacked: no table row is wider than the screen, and header cells are out of the way.
          const widest = await page.evaluate(() => Math.max(0, ...[...document.querySelectorAll('table.stack tr')].map((tr) => tr.getBoundingClientRect().right)));
          assert.ok(widest <= 375, `${path}: a row reaches ${widest} px`);
          const scrolls = await page.evaluate(() => [...document.querySelectorAll('.overflow-auto')].filter((d) => d.scrollWidth > d.clientWidth + 1).length);
          assert.equal(scrolls, 0, `${path}: a table box scrolls sideways`);
        }
      }
    }
    // The envelopes switch counts both sides: one live envelope, none in test.
    await page.goto(`${base}/dashboard/envelopes`);
    assert.equal(await page.getByRole('link', { name: 'Live (1)' }).getAttribute('aria-current'), 'page');
    assert.ok(await page.getByRole('link', { name: 'Test (0)' }).isVisible());
    // The keys table at 375 px: the Revoke button is on screen.
    await page.goto(`${base}/dashboard/keys`);
    const revoke = await page.getByRole('button', { name: /^Revoke/ }).first().boundingBox();
    assert.ok(revoke && revoke.x + revoke.width <= 375, `Revoke at ${JSON.stringify(revoke)}`);
    assert.deepEqual(problems, []);
  });
});
