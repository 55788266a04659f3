// test-lane: once (pages in Chromium; the routes behind them run on both stores in dashboard-envelope-actions.test.ts)
/**
 * Issue 36.3 in a real Chromium, worked with the keyboard: on a sent envelope's page, copy a
 * recipient's link, reissue it (confirmation page), resend, preview the document, cancel
 * (confirmation page). Every page axe-clean and no wider than the screen at 1280 and 375 px, with
 * screenshots. (The envelope is created through the API: the dashboard's create page is not built yet.)
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import type { TestApp } from '../harness.js';
import { signInDashboard } from '../fixtures/dashboard.js';
import { artifactPath, assertPageFitsAndIsAccessible, contractPdf, launchChromium, startBrowserApp, watchPage, type Api } from './helpers.js';

const WIDTHS = [1280, 375] as const;
const shot = (name: string) => {
  if (process.env.SHOTS_DIR) mkdirSync(process.env.SHOTS_DIR, { recursive: true });
  return process.env.SHOTS_DIR ? path.join(process.env.SHOTS_DIR, name) : artifactPath(name);
};

describe('envelope actions in Chromium', () => {
  let t: TestApp;
  let base: string;
  let api: Api;
  let context: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;

  before(async () => {
    ({ t, base, api } = await startBrowserApp({ env: { SIGNING_ENGINE: 'local' } }));
    const browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    closeBrowser = browser.close;
    context = browser.context;
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const { sessionToken } = await signInDashboard(t);
    await context.addCookies([{ name: 'svc_session', value: sessionToken, url: base, httpOnly: true, sameSite: 'Lax' }]);
  });
  after(async () => {
    await closeBrowser?.();
    await t?.close();
  });

  async function checkWidths(page: Page, name: string): Promise<void> {
    const url = page.url();
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 375 ? 812 : 900 });
      await page.goto(url);
      await assertPageFitsAndIsAccessible(page, name, width);
      await page.screenshot({ path: shot(`actions-${name}-${width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  /** Tabs to the control with this accessible name and presses Enter: the keyboard reaches it. */
  async function pressByKeyboard(page: Page, name: RegExp): Promise<void> {
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      const label = await page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        return el ? (el.getAttribute('aria-label') ?? el.textContent ?? '').trim() : '';
      });
      if (name.test(label)) return page.keyboard.press('Enter');
    }
    assert.fail(`no control named ${name} reached with Tab`);
  }

  test('copy, reissue, resend, preview and cancel, by keyboard; axe-clean at 1280 and 375 px', async () => {
    const created = await api.createEnvelope(await contractPdf(), { title: 'Dashboard actions', recipients: [{ name: 'Ada Signer', email: 'ada@example.com', role: 'SIGNER' }], fields: [{ recipientEmail: 'ada@example.com', type: 'SIGNATURE', page: 1, positionXPercent: 10, positionYPercent: 70, widthPercent: 25, heightPercent: 6 }] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id: string = created.body.envelopeId;
    const page = await context.newPage();
    const problems = await watchPage(page, '/dashboard');
    await page.goto(`${base}/dashboard/envelopes/${id}`);
    await page.waitForFunction(() => document.body.textContent?.includes('Sent') || document.querySelector('[action$="/resend"]'), undefined, { timeout: 15_000 }).catch(() => undefined);
    await page.reload();
    await checkWidths(page, 'envelope');

    // Copy the link.
    await pressByKeyboard(page, /^Copy link of Ada Signer$/);
    await page.getByText('Copied', { exact: true }).first().waitFor();
    const oldLink = await page.evaluate(() => navigator.clipboard.readText());
    assert.match(oldLink, /\/sign\/[A-Za-z0-9_-]{43}$/);

    // Reissue it, after the confirmation page.
    await pressByKeyboard(page, /^Reissue link of Ada Signer$/);
    await page.waitForURL(/\/recipients\/1\/link/);
    await checkWidths(page, 'reissue-confirm');
    await pressByKeyboard(page, /^Reissue link$/);
    await page.waitForURL(/done=reissued/);
    await page.getByText('New link issued').waitFor();
    const newLink = (await page.locator('#link-1').textContent())!.trim();
    assert.notEqual(newLink, oldLink);
    assert.equal((await fetch(`${oldLink}/session`)).status, 404, 'the old link is dead');
    assert.equal((await fetch(`${newLink}/session`)).status, 200);

    // Resend.
    await pressByKeyboard(page, /^Resend$/);
    await page.waitForURL(/done=resent/);
    await page.getByText('Reminders sent').waitFor();

    // Preview: the PDF the link opens, served inline.
    const preview = await page.request.get(`${base}/dashboard/envelopes/${id}/preview`);
    assert.equal(preview.status(), 200);
    assert.equal(preview.headers()['content-type'], 'application/pdf');
    assert.match(preview.headers()['content-disposition'], /^inline/);

    // Cancel, after the confirmation page.
    await pressByKeyboard(page, /^Cancel envelope$/);
    await page.waitForURL(/\/cancel/);
    await checkWidths(page, 'cancel-confirm');
    await pressByKeyboard(page, /^Cancel envelope$/);
    await page.waitForURL(/done=cancelled/);
    await page.getByText('Envelope cancelled').waitFor();
    await checkWidths(page, 'cancelled');
    assert.equal((await api.json<{ status: string }>('GET', `/v1/envelopes/${id}`)).body.status, 'CANCELLED');
    assert.deepEqual(problems, []);
  });
});
