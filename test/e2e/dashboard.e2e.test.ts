// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { BrowserContext, Page } from 'playwright-core';
import { createTestApp, type TestApp } from '../harness.js';
import { signInDashboard } from '../fixtures/dashboard.js';
import { startReceiver, type Receiver } from '../fixtures/receiver.js';
import { apiClient, artifactPath, assertPageFitsAndIsAccessible, contractPdf, freePort, launchChromium, waitFor, type Api } from './helpers.js';

const WIDTHS = [1280, 375] as const;

/**
 * The dashboard in a real Chromium against a listening server: a key minted in the browser, copied with
 * the copy button, used against the API and revoked in the browser (the API refuses it at once); then
 * every page at 1280 and 375 px: no horizontal overflow, no serious or critical axe-core violation,
 * no CSP violation, and a screenshot in test-artifacts/ for a person to look at.
 */
describe('the dashboard in Chromium', () => {
  let t: TestApp;
  let base: string;
  let api: Api;
  let receiver: Receiver;
  let context: BrowserContext;
  const closers: (() => Promise<void>)[] = [];
  let completedId: string;
  const problems: string[] = [];

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_URL: base, WORKER_ENABLED: 'true', SCHEDULER_INTERVAL_MS: '100', WEBHOOK_ALLOW_HOSTS: '127.0.0.1' }, creditCents: 2500 });
    await t.app.listen({ host: '127.0.0.1', port });
    await t.container.worker.start();
    api = apiClient(base, t.customer.apiKey);
    receiver = await startReceiver({ handler: (req) => (req.path.startsWith('/flaky') ? 503 : 200) });
    await seed();

    const browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    closers.push(browser.close);
    context = browser.context;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const { sessionToken } = await signInDashboard(t);
    await context.addCookies([{ name: 'svc_session', value: sessionToken, url: base, httpOnly: true, sameSite: 'Lax' }]);
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
    });
    context.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`${msg.page()?.url()}: ${msg.text()}`);
    });
    context.on('weberror', (err) => problems.push(`pageerror: ${err.error().message}`));
  });

  after(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
    await receiver?.close();
    await t?.close();
  });

  /** Realistic data for the pages: envelopes in several states, spending over some days, webhooks with deliveries. */
  async function seed(): Promise<void> {
    const pdf = await contractPdf();
    const hook = (path: string, events: string[]) => api.json('POST', '/v1/webhooks', { url: receiver.url(path), events, description: path === '/crm' ? 'CRM sync' : null });
    assert.equal((await hook('/crm', ['*'])).status, 201);
    assert.equal((await hook('/flaky/billing-service/receive-signet-events', ['envelope.completed', 'envelope.sent'])).status, 201);
    const sig = (email: string) => ({ type: 'SIGNATURE', recipientEmail: email, page: 1, positionXPercent: 10, positionYPercent: 70, widthPercent: 25, heightPercent: 6 });
    const create = async (title: string, people: { email: string; name: string; role?: string }[]) => {
      const res = await api.createEnvelope(pdf, { title, recipients: people.map((p) => ({ role: 'SIGNER', ...p })), fields: people.filter((p) => (p.role ?? 'SIGNER') === 'SIGNER').map((p) => sig(p.email)) });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    };
    const done = await create('Master services agreement — Northwind Traders', [{ email: 'ada@northwind.example', name: 'Ada Lovelace' }]);
    completedId = done.envelopeId;
    await create('Mutual NDA', [{ email: 'grace@contoso.example', name: 'Grace Hopper' }, { email: 'legal@contoso.example', name: 'Contoso Legal', role: 'CC' }]);
    await create('Offer letter: Senior engineer', [{ email: 'alan@example.com', name: 'Alan Turing' }]);
    const cancelled = await create('Lease addendum (superseded)', [{ email: 'tenant@example.com', name: 'Tenant' }]);
    assert.equal((await api.json('DELETE', `/v1/envelopes/${cancelled.envelopeId}`)).status, 200);
    await create('Statement of work #7', [{ email: 'pm@fabrikam.example', name: 'Fabrikam PM' }, { email: 'cfo@fabrikam.example', name: 'Fabrikam CFO' }]);
    // The completed one: its recipient signs through the signing API, and the worker seals it.
    const token = new URL(done.recipients[0].signingUrl).pathname.split('/').pop();
    const session = await (await fetch(`${base}/sign/${token}/session`)).json();
    const fields = session.fields.map((f: { fieldId: number }) => ({ fieldId: f.fieldId, value: null }));
    await fetch(`${base}/sign/${token}/consent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const signed = await fetch(`${base}/sign/${token}/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fields, signature: { kind: 'typed', text: 'Ada Lovelace' } }) });
    assert.equal(signed.status, 200, await signed.text());
    await waitFor('the envelope to be sealed', async () => {
      const s = await api.json<{ status: string }>('GET', `/v1/envelopes/${completedId}`);
      return { done: s.body.status === 'COMPLETED' ? true : undefined, seen: s.body.status };
    });
    // Spending on earlier days too, so the chart has a shape: move some charges back in time.
    await t.container.db.execute(sql`UPDATE ledger_entries SET created_at = created_at - (interval '1 day' * (3 + (abs(hashtext(id::text)) % 20))) WHERE customer_id = ${t.customer.id} AND direction = 'debit'`);
    await waitFor('webhook deliveries', async () => ({ done: receiver.requests.length >= 4 ? true : undefined, seen: receiver.requests.length }));
  }

  /** At each width: the page fits (no sideways scrolling), axe finds nothing serious, and a screenshot is saved. */
  async function checkPage(page: Page, name: string, url: string): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 375 ? 812 : 900 });
      const res = await page.goto(base + url);
      assert.equal(res?.status(), 200, `${name}: ${url} answered ${res?.status()}`);
      await assertPageFitsAndIsAccessible(page, name, width);
      await page.screenshot({ path: artifactPath(`dashboard-${name}-${width}.png`), fullPage: true });
    }
  }

  test('a key minted in the browser is copied, works against the API, and is refused once revoked in the browser', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/keys`);
    await page.getByRole('radio', { name: /^Live/ }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.locator('#new-key');
    await shown.waitFor();
    const key = (await shown.textContent())!.trim();
    assert.match(key, /^svc_live_[0-9a-f]{32}$/);

    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key, 'the clipboard holds the key');

    const live = apiClient(base, key);
    const account = await live.json<{ mode: string; apiKeyPrefix: string }>('GET', '/v1/account');
    assert.equal(account.status, 200);
    assert.equal(account.body.mode, 'live');

    // Reloading the list shows the prefix only; the key is gone from the page for good.
    await page.goto(`${base}/dashboard/keys`);
    assert.equal(await page.locator('#new-key').count(), 0);
    const prefix = account.body.apiKeyPrefix;
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: `Revoke ${prefix}` }).click();
    await page.waitForURL(/\/dashboard\/keys\?revoked=/);
    assert.match((await page.locator('.flash').textContent()) ?? '', new RegExp(`Revoked ${prefix}`));
    assert.equal((await live.json('GET', '/v1/account')).status, 401, 'the API refuses the revoked key');
    await page.close();
  });

  test('a dismissed confirmation revokes nothing', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/keys`);
    const before = await page.getByRole('button', { name: /^Revoke / }).count();
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.getByRole('button', { name: /^Revoke / }).first().click();
    await page.waitForTimeout(300);
    assert.equal(new URL(page.url()).search, '');
    assert.equal(await page.getByRole('button', { name: /^Revoke / }).count(), before);
    await page.close();
  });

  test('every page fits 375 px, passes axe-core, and is saved as a screenshot at 1280 and 375 px', async () => {
    const page = await context.newPage();
    const pages: [string, string][] = [
      ['overview', '/dashboard'],
      ['keys', '/dashboard/keys'],
      ['billing', '/dashboard/billing'],
      ['envelopes', '/dashboard/envelopes'],
      ['envelope-detail', `/dashboard/envelopes/${completedId}`],
      ['webhooks', '/dashboard/webhooks'],
      ['products', '/dashboard/products'],
    ];
    for (const [name, url] of pages) await checkPage(page, name, url);
    await page.close();

    // Sign-in is for a browser without a session: a fresh profile.
    const fresh = await launchChromium();
    closers.push(fresh.close);
    await checkPage(await fresh.context.newPage(), 'sign-in', '/dashboard/sign-in');
    assert.deepEqual(problems, [], 'no script errors or CSP violations');
  });

  test('the key page right after a mint, at both widths', async () => {
    const page = await context.newPage();
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${base}/dashboard/keys`);
      await page.getByRole('radio', { name: /^Test/ }).check();
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('#new-key').waitFor();
      await assertPageFitsAndIsAccessible(page, 'keys-minted', width);
      await page.screenshot({ path: artifactPath(`dashboard-keys-minted-${width}.png`), fullPage: true });
    }
    await page.close();
  });

  test('Enable on the products page goes through the /v1 route with the cookie and the page token', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/products`);
    await page.getByRole('button', { name: /^Enable / }).click();
    await page.locator('.badge.good', { hasText: 'Enabled' }).waitFor();
    assert.equal(await page.locator('[data-enable-product]').count(), 0);
    const listed = await fetch(`${base}/v1/account/products`, { headers: { authorization: `Bearer ${t.customer.apiKey}` } });
    assert.deepEqual((await listed.json()).data.map((p: { product: string }) => p.product), ['service_id']);
    await page.close();
  });
});
