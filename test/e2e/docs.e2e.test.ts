// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
/**
 * GET /, the API reference (/docs) and the guides in a real Chromium against the real server: each fits
 * 1280 and 375 px with no axe violation and no CSP report, Swagger UI renders our /openapi.json from
 * files we serve, and "try it" with a test key reaches this server. Screenshots under
 * test-artifacts/docs-*.png.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { createTestApp, type TestApp } from '../harness.js';
import { artifactPath, assertPageFitsAndIsAccessible, freePort, launchChromium, watchPage } from './helpers.js';

const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
const SIZES = [['desktop', DESKTOP, 1280], ['phone', PHONE, 375]] as const;

describe('docs pages in Chromium', () => {
  let t: TestApp;
  let base: string;
  const browsers: { close: () => Promise<void> }[] = [];
  const outside: string[] = [];

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_URL: base } });
    await t.app.listen({ host: '127.0.0.1', port });
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
  });

  async function open(options: BrowserContextOptions, path: string): Promise<{ page: Page; problems: string[] }> {
    const browser = await launchChromium(options);
    browsers.push(browser);
    const page = await browser.context.newPage();
    // Nothing may leave this server: no CDN, no validator, no fonts from elsewhere.
    page.on('request', (r) => !r.url().startsWith(base) && !r.url().startsWith('data:') && outside.push(r.url()));
    const problems = await watchPage(page, '/');
    await page.goto(`${base}${path}`);
    return { page, problems };
  }

  for (const [label, options, width] of SIZES) {
    test(`GET / links the dashboard, the docs, verify-document and health (${label})`, async () => {
      const { page, problems } = await open(options, '/');
      for (const name of ['Dashboard', 'API reference', 'Guides', 'Verify a document', 'Health']) await page.getByRole('link', { name }).waitFor();
      await page.screenshot({ path: artifactPath(`docs-home-${label}.png`), fullPage: true });
      await assertPageFitsAndIsAccessible(page, 'home', width);
      assert.deepEqual(problems, []);
      assert.deepEqual(outside, []);
    });

    test(`/docs renders the reference from /openapi.json (${label})`, async () => {
      const { page, problems } = await open(options, '/docs');
      await page.locator('.swagger-ui .opblock').first().waitFor({ timeout: 60_000 });
      assert.ok((await page.locator('.swagger-ui .opblock').count()) > 20, 'every route is listed');
      await page.screenshot({ path: artifactPath(`docs-reference-${label}.png`) });
      await assertPageFitsAndIsAccessible(page, 'reference', width);
      assert.deepEqual(problems, []);
      assert.deepEqual(outside, []);
    });

    test(`/docs/guides and a guide render (${label})`, async () => {
      const { page, problems } = await open(options, '/docs/guides');
      await page.getByRole('navigation', { name: 'Guides' }).getByRole('link').first().click();
      await page.locator('article.markdown h1').waitFor();
      await page.screenshot({ path: artifactPath(`docs-guide-${label}.png`) });
      await assertPageFitsAndIsAccessible(page, 'guide', width);
      assert.deepEqual(problems, []);
      assert.deepEqual(outside, []);
    });
  }

  test('"try it" with a test key calls this server', async () => {
    const { page, problems } = await open(DESKTOP, '/docs');
    await page.locator('.swagger-ui .opblock').first().waitFor({ timeout: 60_000 });
    await page.getByRole('button', { name: /Authorize/ }).first().click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('input').first().fill(t.customer.testApiKey);
    await dialog.locator('button.modal-btn.authorize').first().click();
    await dialog.locator('button.btn-done').first().click();
    const op = page.locator('.opblock-get', { has: page.locator('[data-path="/v1/account"]') }).first();
    await op.locator('.opblock-summary-control').click();
    await op.getByRole('button', { name: 'Try it out' }).click();
    await op.getByRole('button', { name: 'Execute' }).click();
    const status = op.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 60_000 });
    assert.equal((await status.innerText()).trim(), '200');
    assert.deepEqual(problems, []);
  });
});
