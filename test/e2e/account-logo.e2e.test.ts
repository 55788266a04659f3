// test-lane: once (pages in Chromium; the routes behind them run on both stores in test/account-logo.test.ts)
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { crc32, deflateSync } from 'node:zlib';
import { signInDashboard } from '../fixtures/dashboard.js';
import type { TestApp } from '../harness.js';
import { assertPageFitsAndIsAccessible, contractPdf, launchChromium, startBrowserApp, type Api } from './helpers.js';

const SHOTS = process.env.SHOTS_DIR ?? '/tmp/shots-h-logo';

/** A 240×60 PNG wordmark stand-in: a dark green bar with a lighter square, encoded here (no image library). */
function logoPng(): Buffer {
  const [w, h] = [240, 60];
  const rows: Buffer[] = [];
  for (let y = 0; y < h; y++) {
    const row = Buffer.alloc(1 + w * 3);
    for (let x = 0; x < w; x++) {
      const mark = x >= 10 && x < 50 && y >= 10 && y < 50;
      const bar = x >= 60 && x < 230 && y >= 22 && y < 38;
      const [r, g, b] = mark ? [0x2e, 0xa0, 0x4f] : bar ? [0x0b, 0x5d, 0x1e] : [0xff, 0xff, 0xff];
      row.set([r, g, b], 1 + x * 3);
    }
    rows.push(row);
  }
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.concat(rows))), chunk('IEND', Buffer.alloc(0))]);
}

/**
 * The logo in a real Chromium: uploaded on the settings page (a file input in its own form, the
 * current logo shown, keyboard-operable), then at the top of a recipient's signing page with the
 * sender's name as alt text, each at 1280 and 375 px (no sideways scrolling, axe-clean, no CSP refusal).
 */
describe('the account logo in Chromium', () => {
  let t: TestApp;
  let base: string;
  let api: Api;
  const problems: string[] = [];

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    ({ t, base, api } = await startBrowserApp());
    assert.equal((await api.json('PATCH', '/v1/account', { displayName: 'Greenfield Legal' })).status, 200);
  });
  after(async () => {
    await t?.close();
  });

  test('settings: upload with the keyboard, the current logo shown, then on the signing page', async () => {
    const browser = await launchChromium({ viewport: { width: 1280, height: 900 } });
    try {
      const { context } = browser;
      const { sessionToken } = await signInDashboard(t);
      await context.addCookies([{ name: 'svc_session', value: sessionToken, url: base, httpOnly: true, sameSite: 'Lax' }]);
      await context.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
      });
      context.on('console', (msg) => {
        if (msg.type() === 'error' && !/status of 400/.test(msg.text())) problems.push(`${msg.page()?.url()}: ${msg.text()}`);
      });
      const page = await context.newPage();
      await page.goto(`${base}/dashboard/settings`);
      await page.getByLabel('Upload a logo').setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: logoPng() });
      // From the keyboard: the file input, Tab to its button, Enter.
      await page.getByLabel('Upload a logo').focus();
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Upload logo');
      await page.keyboard.press('Enter');
      await page.waitForURL(/saved=logo$/);
      const current = page.getByRole('img', { name: 'Your current logo' });
      await current.waitFor();
      assert.ok(await current.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth === 240), 'the current logo loads');
      for (const width of [1280, 375]) {
        await page.setViewportSize({ width, height: 900 });
        await assertPageFitsAndIsAccessible(page, 'settings with a logo', width);
        await page.locator('#logo-title').scrollIntoViewIfNeeded();
        await page.screenshot({ path: `${SHOTS}/settings-logo-${width}.png` });
      }

      const who = { email: 'logo-rita@example.com', name: 'Rita Logo' };
      const created = await api.createEnvelope(await contractPdf(), {
        title: 'Services agreement',
        recipients: [{ ...who, role: 'SIGNER' }],
        fields: [{ type: 'SIGNATURE', recipientEmail: who.email, page: 1, positionXPercent: 8, positionYPercent: 66, widthPercent: 36, heightPercent: 8 }],
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const link: string = created.body.recipients[0].signingUrl;
      for (const width of [1280, 375]) {
        await page.setViewportSize({ width, height: 900 });
        await page.goto(link);
        const logo = page.getByRole('img', { name: 'Greenfield Legal' });
        await logo.waitFor({ timeout: 60_000 });
        assert.ok(await logo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth === 240), 'the logo loads under the signing page CSP');
        await page.locator('#signing-app[data-step="consent"], #signing-app[data-ready="true"]').first().waitFor({ timeout: 60_000 });
        await assertPageFitsAndIsAccessible(page, 'branded signing page', width);
        await page.screenshot({ path: `${SHOTS}/signing-logo-${width}.png` });
      }
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });
});
