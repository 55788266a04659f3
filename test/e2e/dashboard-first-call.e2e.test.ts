// test-lane: once (pages in Chromium; the routes behind them run on both stores in dashboard-first-call.test.ts)
/**
 * Issue 35.6 in a real Chromium: the first-call snippet's copy button, worked with the keyboard, puts
 * the snippet on the clipboard, says "Copied" and announces it; at 375 px the snippet scrolls inside
 * its own box and the page does not get wider than the screen (axe-clean); the keys page after a
 * test key is minted, and the envelopes page showing test data, the same. Screenshots at 1280 and 375 px.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { createTestApp, type TestApp, type TestCustomer } from '../harness.js';
import { signInDashboard } from '../fixtures/dashboard.js';
import { apiClient, artifactPath, assertPageFitsAndIsAccessible, freePort, launchChromium, watchPage } from './helpers.js';

const WIDTHS = [1280, 375] as const;
/** SHOTS_DIR keeps the screenshots somewhere else too (a person looks at them); test-artifacts/ always. */
const shot = (name: string) => {
  if (process.env.SHOTS_DIR) mkdirSync(process.env.SHOTS_DIR, { recursive: true });
  return process.env.SHOTS_DIR ? path.join(process.env.SHOTS_DIR, name) : artifactPath(name);
};

describe('the first call in Chromium', () => {
  let t: TestApp;
  let base: string;
  let c: TestCustomer;
  let context: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_URL: base } });
    await t.app.listen({ host: '127.0.0.1', port });
    c = await t.createCustomer(500);
    const browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    closeBrowser = browser.close;
    context = browser.context;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const { sessionToken } = await signInDashboard(t, c.id);
    await context.addCookies([{ name: 'svc_session', value: sessionToken, url: base, httpOnly: true, sameSite: 'Lax' }]);
  });
  after(async () => {
    await closeBrowser?.();
    await t?.close();
  });

  async function checkWidths(page: Page, name: string, url: string, whenLoaded: (page: Page) => Promise<void> = async () => {}): Promise<void> {
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 375 ? 812 : 900 });
      const res = await page.goto(base + url);
      assert.equal(res?.status(), 200, url);
      await whenLoaded(page);
      await assertPageFitsAndIsAccessible(page, name, width);
      await page.screenshot({ path: shot(`first-call-${name}-${width}.png`), fullPage: true });
    }
  }

  /** The snippet's box stays inside the screen and scrolls sideways itself when its lines are longer. */
  async function assertSnippetScrollsInItsBox(page: Page, width: number): Promise<void> {
    const box = await page.locator('#first-call').evaluate((el) => ({ right: el.getBoundingClientRect().right, scrollWidth: el.scrollWidth, clientWidth: el.clientWidth, overflowX: getComputedStyle(el).overflowX }));
    assert.ok(box.right <= width, `the snippet box ends at ${box.right} px on a ${width} px screen`);
    assert.equal(box.overflowX, 'auto');
    if (width === 375) assert.ok(box.scrollWidth > box.clientWidth, 'the long lines scroll inside the box, not clipped or wrapped out of shell syntax');
  }

  test('the copy button works with the keyboard, says Copied and announces it; the snippet fits at 375 px', async () => {
    const page = await context.newPage();
    const problems = await watchPage(page, '/dashboard');
    await checkWidths(page, 'overview', '/dashboard', async (p) => assertSnippetScrollsInItsBox(p, p.viewportSize()!.width));

    await page.setViewportSize({ width: 375, height: 812 });
    await page.goto(`${base}/dashboard`);
    const shown = (await page.locator('#first-call').textContent())!.trim();
    assert.match(shown, /curl -s -o nda\.pdf http:\/\/127\.0\.0\.1:\d+\/samples\/nda\.pdf/);
    // From the snippet box, Tab reaches the Copy button, and Enter presses it.
    await page.locator('#first-call').focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-copy')), 'first-call', 'Tab goes from the snippet to its Copy button');
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await page.locator('.snippet .copy-status').textContent(), 'Copied to the clipboard');
    assert.equal(await page.locator('.snippet .copy-status').getAttribute('aria-live'), 'polite');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shown, 'the clipboard holds the snippet as shown');
    await page.screenshot({ path: shot('first-call-copied-375.png'), fullPage: false, clip: { x: 0, y: 0, width: 375, height: 812 } });
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('the keys page after minting a test key, and the envelopes page showing test data, fit and are axe-clean', async () => {
    const page = await context.newPage();
    const problems = await watchPage(page, '/dashboard');
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 375 ? 812 : 900 });
      await page.goto(`${base}/dashboard/keys`);
      await page.getByRole('radio', { name: /^Test/ }).check();
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('#first-call').waitFor();
      assert.match((await page.locator('#first-call').textContent())!, /^export SIGNET_API_KEY=svc_test_[0-9a-f]{32}\n/);
      await assertSnippetScrollsInItsBox(page, width);
      await assertPageFitsAndIsAccessible(page, 'keys after a test mint', width);
      await page.screenshot({ path: shot(`first-call-keys-${width}.png`), fullPage: true });
    }

    const sent = await apiClient(base, c.testApiKey).createEnvelope(
      new Uint8Array(await (await fetch(`${base}/samples/nda.pdf`)).arrayBuffer()),
      { title: 'NDA', recipients: [{ email: 'alice@example.com', name: 'Alice', role: 'SIGNER' }, { email: 'bob@example.com', name: 'Bob', role: 'SIGNER' }] },
    );
    assert.equal(sent.status, 201, JSON.stringify(sent.body));
    await checkWidths(page, 'envelopes-test-data', '/dashboard/envelopes', async (p) => {
      assert.match((await p.locator('.test-banner').textContent())!, /Test data Showing test envelopes: this account has no live ones yet/);
      await p.getByRole('link', { name: 'NDA' }).waitFor();
    });
    assert.deepEqual(problems, []);
    await page.close();
  });
});
