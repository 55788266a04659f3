// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
/**
 * An email verification done by a person in a real Chromium against the real server (HTTP, worker,
 * SMTP): the page asks for a code, the code arrives at a real SMTP server, a wrong code is refused with
 * the attempts left, the right code verifies. Also the failed, expired and redirect paths, at 1280 and
 * 375 px, with screenshots under /tmp/shots/verify-*.png.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContextOptions, Page } from 'playwright-core';
import type { TestApp } from '../harness.js';
import { startSmtpServer, type TestSmtpServer } from '../fixtures/smtp.js';
import { launchChromium, startBrowserApp, watchPage, type Api } from './helpers.js';

const SHOTS = '/tmp/shots';
const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

describe('email verification in Chromium', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  let api: Api;
  let base: string;
  let offsetMs = 0;
  const browsers: { close: () => Promise<void> }[] = [];

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    smtp = await startSmtpServer();
    ({ t, base, api } = await startBrowserApp({ creditCents: 10_000, env: { SMTP_URL: smtp.url }, overrides: { clock: () => new Date(Date.now() + offsetMs) } }));
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
    await smtp?.close();
  });

  async function newPage(options: BrowserContextOptions): Promise<{ page: Page; problems: string[] }> {
    const browser = await launchChromium(options);
    browsers.push(browser);
    const page = await browser.context.newPage();
    // A refused code answers 4xx by design; the browser logs the status, which is no problem of the page.
    return { page, problems: await watchPage(page, '/verify/', /status of 4\d\d/) };
  }

  async function createVerification(email: string, extra: Record<string, unknown> = {}): Promise<{ verificationId: string; verificationUrl: string }> {
    const res = await fetch(`${base}/v1/verifications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.customer.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `e2e-${email}-${Date.now()}` },
      body: JSON.stringify({ type: 'email', email, ...extra }),
    });
    assert.equal(res.status, 201);
    return res.json();
  }

  async function open(page: Page, url: string): Promise<void> {
    await page.goto(url);
    await page.locator('#verify-app[data-ready="true"]').waitFor({ timeout: 60_000 });
  }

  /** Clicks "Email me a code" and reads the code from the mail the SMTP server received. */
  async function askForCode(page: Page, email: string): Promise<string> {
    const before = smtp.messages.length;
    await page.getByTestId('send-code').click();
    await page.getByTestId('panel-enter').waitFor({ state: 'visible' });
    const mail = await smtp.waitFor((m) => smtp.messages.indexOf(m) >= before && JSON.stringify(m.to).includes(email), 15_000);
    const code = /verification code is (\d{6})/.exec(mail.text ?? '')?.[1];
    assert.ok(code, mail.text);
    return code;
  }

  const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

  async function enter(page: Page, code: string): Promise<void> {
    await page.getByTestId('code-input').fill(code);
    await page.getByTestId('confirm-code').click();
  }

  for (const [label, options] of [['1280', DESKTOP], ['375', PHONE]] as const) {
    test(`at ${label} px: ask for a code, a wrong code shows the attempts left, the right code verifies`, async () => {
      const email = `pat-${label}@example.com`;
      const v = await createVerification(email, { name: 'Pat Person' });
      const { page, problems } = await newPage(options);
      await open(page, v.verificationUrl);
      assert.equal(await page.locator('#verify-app').getAttribute('data-state'), 'ask');
      assert.equal(await page.getByTestId('panel-ask').getByTestId('sent-to').textContent(), 'p***@example.com');
      await page.screenshot({ path: path.join(SHOTS, `verify-ask-${label}.png`), fullPage: true });

      const code = await askForCode(page, email);
      assert.equal(await page.getByTestId('resend-code').isDisabled(), true, 'the resend link waits');
      await page.screenshot({ path: path.join(SHOTS, `verify-enter-${label}.png`), fullPage: true });

      await enter(page, wrong(code));
      await page.getByTestId('verify-error').waitFor({ state: 'visible' });
      assert.equal(await page.getByTestId('verify-error').textContent(), 'That code is not right. 4 attempts left.');
      assert.equal(await page.getByTestId('verify-info').isVisible(), false);
      await page.screenshot({ path: path.join(SHOTS, `verify-wrong-${label}.png`), fullPage: true });
      // A reload is rendered by the server in the same state, with the attempts left.
      await open(page, v.verificationUrl);
      assert.equal(await page.locator('#verify-app').getAttribute('data-state'), 'enter');
      assert.equal(await page.getByTestId('attempts').textContent(), '4 attempts left. ');

      await enter(page, code);
      await page.getByTestId('panel-verified').waitFor({ state: 'visible' });
      assert.equal(await page.getByTestId('verify-error').isVisible(), false);
      await page.screenshot({ path: path.join(SHOTS, `verify-verified-${label}.png`), fullPage: true });

      const stored = await api.json<{ status: string; verifiedAt: string | null }>('GET', `/v1/verifications/${v.verificationId}`);
      assert.equal(stored.body.status, 'verified');
      assert.ok(stored.body.verifiedAt);
      // A reload shows the verified page, rendered by the server.
      await open(page, v.verificationUrl);
      assert.equal(await page.getByTestId('panel-verified').isVisible(), true);
      assert.deepEqual(problems, []);
    });
  }

  test('five wrong codes fail the verification; an expired link says so', async () => {
    const email = 'fail@example.com';
    const v = await createVerification(email);
    const { page, problems } = await newPage(PHONE);
    await open(page, v.verificationUrl);
    const code = await askForCode(page, email);
    for (let left = 4; left >= 1; left--) {
      await enter(page, wrong(code));
      await page.getByTestId('verify-error').filter({ hasText: `${left} attempt${left === 1 ? '' : 's'} left` }).waitFor();
    }
    await enter(page, wrong(code));
    await page.getByTestId('panel-failed').waitFor({ state: 'visible' });
    await page.screenshot({ path: path.join(SHOTS, 'verify-failed-375.png'), fullPage: true });

    const late = await createVerification('late@example.com');
    offsetMs = 24 * 3_600_000 + 1_000;
    try {
      const desktop = await newPage(DESKTOP);
      await open(desktop.page, late.verificationUrl);
      assert.equal(await desktop.page.getByTestId('panel-expired').isVisible(), true);
      await desktop.page.screenshot({ path: path.join(SHOTS, 'verify-expired-1280.png'), fullPage: true });
      assert.deepEqual(desktop.problems, []);
    } finally {
      offsetMs = 0;
    }
    assert.deepEqual(problems, []);
  });

  test('once verified, the person is sent on to redirectUrl', async () => {
    const email = 'redirect@example.com';
    const target = `${base}/health`;
    const v = await createVerification(email, { redirectUrl: target });
    const { page, problems } = await newPage(DESKTOP);
    await open(page, v.verificationUrl);
    const code = await askForCode(page, email);
    await enter(page, code);
    await page.waitForURL(target, { timeout: 60_000 });
    assert.deepEqual(problems, []);
  });
});
