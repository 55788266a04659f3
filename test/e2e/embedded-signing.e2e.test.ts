// test-lane: once (pages in Chromium; the routes behind them run on both stores in test/embed-links.test.ts)
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Frame, Page } from 'playwright-core';
import type { TestApp } from '../harness.js';
import { invitationEmail } from '../../src/providers/email/templates/index.js';
import { signInDashboard } from '../fixtures/dashboard.js';
import { assertPageFitsAndIsAccessible, contractPdf, launchChromium, startBrowserApp, waitFor, type Api } from './helpers.js';

const SHOTS = '/tmp/shots-h-embed';

/**
 * A customer's page on another origin frames an embed link through /embed.js: the recipient agrees,
 * signs inside the frame, and the page receives signet:ready then signet:signed. A page on an origin the
 * account did not allow is refused the frame by Chromium (frame-ancestors) and never hears signet:ready.
 */
describe('embedded signing in Chromium', () => {
  let t: TestApp;
  let api: Api;
  let base: string;
  const servers: Server[] = [];
  const browsers: { close: () => Promise<void> }[] = [];

  /** The customer's app: a page that includes /embed.js and frames the link given in ?url=. */
  async function customerSite(): Promise<string> {
    const server = createServer((req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Acme app</title>
<script src="${base}/embed.js"></script></head>
<body><h1>Acme: sign your contract</h1><div id="signing" style="height:900px"></div>
<script>
  window.signetEvents = [];
  Signet.embed({ url: new URL(location.href).searchParams.get('url'), container: '#signing', onEvent: (e) => window.signetEvents.push(e) });
</script></body></html>`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    // localhost, not 127.0.0.1: another origin than Signet's, which listens on 127.0.0.1.
    return `http://localhost:${(server.address() as AddressInfo).port}`;
  }

  before(async () => {
    ({ t, base, api } = await startBrowserApp({ env: { SIGNING_ENGINE: 'local' } }));
    mkdirSync(SHOTS, { recursive: true });
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    for (const s of servers) s.close();
    await t?.close();
  });

  const events = (page: Page) => page.evaluate(() => (window as unknown as { signetEvents: { type: string }[] }).signetEvents);

  async function signetFrame(page: Page): Promise<Frame> {
    return waitFor('the Signet frame', async () => {
      const frame = page.frames().find((f) => f.url().startsWith(`${base}/sign/embed/`));
      return { done: frame, seen: page.frames().map((f) => f.url()) };
    });
  }

  test('an allowed origin frames the link, the recipient signs inside, the parent hears signet:signed; another origin is refused', async () => {
    const allowed = await customerSite();
    const other = await customerSite().then((o) => o.replace('localhost', '127.0.0.1'));
    const patched = await api.json('PATCH', '/v1/account', { allowedOrigins: [allowed], brandColor: '#0b5d1e' });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));

    const alice = { email: 'embed-alice@example.com', name: 'Alice Embed' };
    const bob = { email: 'embed-bob@example.com', name: 'Bob Embed' };
    const sig = (who: { email: string }, x: number) => ({ type: 'SIGNATURE', recipientEmail: who.email, page: 1, positionXPercent: x, positionYPercent: 66, widthPercent: 36, heightPercent: 8 });
    const created = await api.createEnvelope(await contractPdf(), {
      title: 'Services agreement',
      delivery: 'embedded',
      recipients: [
        { ...alice, role: 'SIGNER' },
        { ...bob, role: 'SIGNER' },
      ],
      fields: [sig(alice, 8), sig(bob, 53)],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const envelopeId: string = created.body.envelopeId;
    const mint = async (recipient: string) => {
      const res = await api.json<{ url: string }>('POST', `/v1/envelopes/${envelopeId}/recipients/${recipient}/embed-link`);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.url;
    };

    for (const width of [1280, 375]) {
      const browser = await launchChromium({ viewport: { width, height: 1000 } });
      browsers.push(browser);
      const page = await browser.context.newPage();
      if (width === 375) {
        // Bob, on a phone: only looked at (and screenshotted); he signs nothing here.
        await page.goto(`${allowed}/?url=${encodeURIComponent(await mint('2'))}`);
        const frame = await signetFrame(page);
        await frame.locator('#signing-app[data-step="consent"], #signing-app[data-ready="true"]').first().waitFor({ timeout: 60_000 });
        await page.screenshot({ path: `${SHOTS}/embedded-signing-375.png`, fullPage: false });
        continue;
      }
      await page.goto(`${allowed}/?url=${encodeURIComponent(await mint('1'))}`);
      const frame = await signetFrame(page);
      await waitFor('signet:ready', async () => {
        const seen = await events(page);
        return { done: seen.some((e) => e.type === 'signet:ready') || undefined, seen };
      });
      assert.deepEqual((await events(page))[0], { type: 'signet:ready', envelopeId, recipientId: 1 });
      // Consent and signing, by keyboard-reachable controls inside the frame.
      await frame.getByTestId('consent-check').check();
      await frame.getByTestId('consent-submit').click();
      await frame.locator('#signing-app[data-ready="true"]').waitFor({ timeout: 60_000 });
      await frame.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
      const accent = await frame.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--accent').trim());
      assert.equal(accent, '#0b5d1e', 'the account colour (brand.css) replaces the built-in accent');
      await frame.locator('[data-testid^="field-"]').first().click();
      await frame.getByTestId('signature-tab-type').click();
      await frame.getByTestId('signature-type-input').fill('Alice Embed');
      await frame.getByTestId('signature-apply').click();
      await frame.getByTestId('signature-dialog').waitFor({ state: 'hidden' });
      // Every field done: Finish shows the account's colour.
      assert.equal(await frame.getByTestId('finish-button').evaluate((b) => getComputedStyle(b).backgroundColor), 'rgb(11, 93, 30)');
      await page.screenshot({ path: `${SHOTS}/embedded-signing-1280.png` });
      await frame.getByTestId('finish-button').click();
      const signed = await waitFor('signet:signed', async () => {
        const seen = await events(page);
        return { done: seen.find((e) => e.type === 'signet:signed'), seen };
      });
      assert.deepEqual(signed, { type: 'signet:signed', envelopeId, recipientId: 1 });
    }

    // The same page on an origin not allowed: Chromium refuses the frame, so signet:ready never comes.
    const browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    browsers.push(browser);
    const page = await browser.context.newPage();
    const refusals: string[] = [];
    page.on('console', (msg) => /frame-ancestors/.test(msg.text()) && refusals.push(msg.text()));
    await page.goto(`${other}/?url=${encodeURIComponent(await mint('2'))}`);
    await waitFor('the CSP refusal', async () => ({ done: refusals[0], seen: refusals }), 15_000);
    assert.match(refusals[0], /violates the following Content Security Policy directive: "frame-ancestors http:\/\/localhost:\d+". The request has been blocked/);
    await sleep(1500);
    assert.deepEqual(await events(page), []);
  });

  test('settings: brand colour and allowed origins with the keyboard, a refused colour inline; the branded invitation email', async () => {
    const browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    browsers.push(browser);
    const { sessionToken } = await signInDashboard(t);
    await browser.context.addCookies([{ name: 'svc_session', value: sessionToken, url: base, httpOnly: true, sameSite: 'Lax' }]);
    const page = await browser.context.newPage();
    await page.goto(`${base}/dashboard/settings`);
    await page.getByLabel('Accent colour').fill('#ffcc00');
    await page.getByLabel('Accent colour').press('Enter');
    await page.waitForLoadState();
    assert.equal(await page.getByLabel('Accent colour').getAttribute('aria-invalid'), 'true');
    assert.match((await page.locator('#brandColor-error').textContent()) ?? '', /contrast of 1\.\d\d:1/);
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 900 });
      await assertPageFitsAndIsAccessible(page, 'settings with a refused colour', width);
      await page.locator('#brand-title').scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${SHOTS}/settings-brand-refused-${width}.png` });
    }
    await page.getByLabel('Accent colour').fill('#0b5d1e');
    await page.getByLabel('Allowed origins, one per line').fill('https://app.example.com');
    await page.getByLabel('Accent colour').press('Enter');
    await page.waitForURL(/saved=1/);
    assert.equal(await page.getByLabel('Accent colour').inputValue(), '#0b5d1e');

    const mail = invitationEmail(
      { title: 'Services agreement', senderName: 'Acme Legal', expiresAt: new Date('2026-12-31T12:00:00Z'), test: false, accent: '#0b5d1e' },
      { name: 'Alice Embed', email: 'alice@example.com' },
      `${base}/sign/${'A'.repeat(43)}`,
      'sign',
    );
    // A blank page, as a mail client's: the dashboard's CSP would drop the email's inline styles.
    const mailPage = await browser.context.newPage();
    for (const width of [1280, 375]) {
      await mailPage.setViewportSize({ width, height: 900 });
      await mailPage.setContent(mail.html);
      await mailPage.screenshot({ path: `${SHOTS}/invitation-branded-${width}.png`, fullPage: true });
    }
  });
});
