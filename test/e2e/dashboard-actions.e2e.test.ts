// test-lane: once (pages in Chromium; the routes behind them run on both stores in dashboard-envelope-actions.test.ts)
/**
 * Issue 36.3 in a real Chromium, worked with the keyboard: on a sent envelope's page, copy a
 * recipient's link, reissue it (confirmation page), resend, preview the document, cancel
 * (confirmation page), after creating the envelope on the dashboard's own form by uploading a PDF.
 * Every page axe-clean and no wider than the screen at 1280 and 375 px, with screenshots.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import type { TestApp } from '../harness.js';
import { signInDashboard } from '../fixtures/dashboard.js';
import { makePdf } from '../fixtures/envelopes.js';
import { apiClient, artifactPath, assertPageFitsAndIsAccessible, launchChromium, startBrowserApp, waitFor, watchPage, type Api } from './helpers.js';

const WIDTHS = [1280, 375] as const;
const shot = (name: string) => {
  if (process.env.SHOTS_DIR) mkdirSync(process.env.SHOTS_DIR, { recursive: true });
  return process.env.SHOTS_DIR ? path.join(process.env.SHOTS_DIR, name) : artifactPath(name);
};

describe('envelope actions in Chromium', () => {
  let t: TestApp;
  let base: string;
  let testApi: Api;
  let context: BrowserContext;
  let closeBrowser: (() => Promise<void>) | undefined;

  before(async () => {
    ({ t, base } = await startBrowserApp({ env: { SIGNING_ENGINE: 'local' } }));
    testApi = apiClient(base, t.customer.testApiKey);
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
    // Create it from the dashboard: upload a PDF with a marker, one recipient, send.
    const pdfPath = path.join(mkdtempSync(path.join(tmpdir(), 'actions-e2e-')), 'contract.pdf');
    writeFileSync(pdfPath, await makePdf([[{ text: 'Client signature {{signature, r1}}', x: 72, y: 200 }]]));
    const page = await context.newPage();
    const problems = await watchPage(page, '/dashboard');
    await page.goto(`${base}/dashboard/envelopes`);
    await pressByKeyboard(page, /^New envelope$/);
    await page.waitForURL(/\/dashboard\/envelopes\/new/);
    await checkWidths(page, 'new');
    await page.getByLabel(/^PDF/).setInputFiles(pdfPath);
    await page.getByLabel('Title', { exact: true }).fill('Dashboard actions');
    await page.getByRole('group', { name: 'Recipient 1' }).getByLabel('Name', { exact: true }).fill('Ada Signer');
    await page.getByRole('group', { name: 'Recipient 1' }).getByLabel('Email', { exact: true }).fill('ada@example.com');
    await page.locator('input[name="mode"][value="test"]').check();
    await page.getByRole('button', { name: 'Create and send' }).press('Enter');
    await page.waitForURL(/done=created/);
    const id = /\/dashboard\/envelopes\/([0-9a-f-]{36})/.exec(page.url())![1];
    await page.getByText('Envelope created').waitFor();
    // Resend needs the invitations out (SENT): the worker sends them within moments.
    await waitFor('the envelope to be sent', async () => {
      const { body } = await testApi.json<{ status: string }>('GET', `/v1/envelopes/${id}`);
      return { done: body.status === 'SENT' ? true : undefined, seen: body.status };
    });
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
    const preview = await page.request.get(`${base}/dashboard/envelopes/${id}/preview?mode=test`);
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
    assert.equal((await testApi.json<{ status: string }>('GET', `/v1/envelopes/${id}`)).body.status, 'CANCELLED');
    assert.deepEqual(problems, []);
  });

  test('a send with neither markers nor fields: the API\'s refusal on the form, announced, axe-clean at both widths', async () => {
    const pdfPath = path.join(mkdtempSync(path.join(tmpdir(), 'actions-e2e-')), 'plain.pdf');
    writeFileSync(pdfPath, await makePdf(1));
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/envelopes/new`);
    await page.getByLabel(/^PDF/).setInputFiles(pdfPath);
    await page.getByLabel('Title', { exact: true }).fill('No markers');
    await page.getByRole('group', { name: 'Recipient 1' }).getByLabel('Name', { exact: true }).fill('Bo Signer');
    await page.getByRole('group', { name: 'Recipient 1' }).getByLabel('Email', { exact: true }).fill('bo@example.com');
    await page.getByRole('button', { name: 'Create and send' }).press('Enter');
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match((await alert.textContent())!, /VALIDATION_ERROR/);
    assert.equal(await page.getByLabel('Title', { exact: true }).inputValue(), 'No markers', 'what was typed is kept');
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 375 ? 812 : 900 });
      await assertPageFitsAndIsAccessible(page, 'new-refused', width);
      await page.screenshot({ path: shot(`actions-new-refused-${width}.png`), fullPage: true });
    }
  });
});
