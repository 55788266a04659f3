// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
/**
 * Dashboard sign-in by emailed link in a real Chromium against the real server (HTTP, in-process
 * worker, a real SMTP server): the form, "check your email", the mail, the confirm page, signed in
 * on the dashboard, then sign-out and the session gone. Each sign-in page fits 375 px, passes axe-core
 * (no serious or critical violation) and the CSP, and is saved to test-artifacts/ at 1280 and 375 px.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { dashboardSessions } from '../../src/db/schema/index.js';
import { sha256Hex } from '../../src/lib/crypto.js';
import { startSmtpServer, type TestSmtpServer } from '../fixtures/smtp.js';
import { createTestApp, type TestApp } from '../harness.js';
import { artifactPath, assertPageFitsAndIsAccessible, freePort, launchChromium, watchPage } from './helpers.js';

const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

describe('dashboard sign-in by email in Chromium', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  let base: string;
  const browsers: { close: () => Promise<void> }[] = [];

  before(async () => {
    smtp = await startSmtpServer();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_URL: base, SMTP_URL: smtp.url, WORKER_ENABLED: 'true', SCHEDULER_INTERVAL_MS: '100' } });
    await t.app.listen({ host: '127.0.0.1', port });
    await t.container.worker.start();
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
    return { page, problems: await watchPage(page, '') };
  }

  /** Fits the width, nothing serious for axe-core, saved as a screenshot. */
  async function check(page: Page, name: string, width: number): Promise<void> {
    await assertPageFitsAndIsAccessible(page, name, width);
    await page.screenshot({ path: artifactPath(`dashboard-sign-in-${name}-${width}.png`), fullPage: true });
  }

  for (const [width, options] of [[1280, DESKTOP], [375, PHONE]] as const) {
    test(`at ${width} px: ask for a link, read it from the mail, confirm, land signed in, sign out`, async () => {
      const address = `pat-${width}@example.com`;
      const { page, problems } = await newPage(options);

      // A signed-out browser asking for the dashboard is sent to sign in, and back afterwards.
      await page.goto(`${base}/dashboard/envelopes`);
      assert.equal(new URL(page.url()).pathname, '/dashboard/sign-in');
      await page.getByRole('heading', { name: 'Sign in to Signet' }).waitFor();
      await check(page, 'form', width);

      await page.getByLabel('Email address').fill(address);
      await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
      await page.getByRole('heading', { name: 'Check your email' }).waitFor();
      assert.equal(await page.getByTestId('sent-to').textContent(), address);
      await check(page, 'check-email', width);

      const mail = await smtp.waitFor((m) => JSON.stringify(m.to).includes(address), 15_000);
      assert.equal(mail.subject, 'Your Signet sign-in link');
      const link = new RegExp(`${base}/dashboard/sign-in/email/[A-Za-z0-9_-]{43}`).exec(mail.text ?? '')?.[0];
      assert.ok(link, mail.text);
      assert.ok(String(mail.html).includes(`href="${link}"`), 'the HTML part links too');
      assert.match(mail.text ?? '', /expires in 15 minutes/);

      await page.goto(link);
      await check(page, 'confirm', width);
      await page.getByRole('button', { name: `Sign in as ${address}` }).click();
      await page.waitForURL(`${base}/dashboard/envelopes`);
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      assert.equal(await page.locator('.account-email').textContent(), address);
      const session = (await page.context().cookies(base)).find((c) => c.name === 'svc_session');
      assert.ok(session, 'signed in');

      // Sign out: the row is revoked, the cookie is gone, the dashboard asks to sign in again.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(`${base}/dashboard/sign-in`);
      assert.equal((await page.context().cookies(base)).find((c) => c.name === 'svc_session'), undefined);
      const [row] = await t.container.db.select().from(dashboardSessions).where(eq(dashboardSessions.tokenHash, sha256Hex(session.value)));
      assert.ok(row.revokedAt, 'the session row is revoked');
      await page.goto(`${base}/dashboard`);
      assert.equal(new URL(page.url()).pathname, '/dashboard/sign-in');
      // A copy of the old cookie opens nothing either.
      const copy = await fetch(`${base}/dashboard`, { headers: { cookie: `svc_session=${session.value}` }, redirect: 'manual' });
      assert.equal(copy.status, 303);

      // The used link is a clear page now.
      const used = await page.goto(link);
      assert.equal(used?.status(), 410);
      await page.getByRole('heading', { name: 'This link cannot be used' }).waitFor();
      await check(page, 'link-used', width);

      assert.deepEqual(problems.filter((p) => !/status of 410/.test(p)), []);
    });
  }
});
