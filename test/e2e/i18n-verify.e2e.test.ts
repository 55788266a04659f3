// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
/**
 * The verification pages in the visitor's language in a real Chromium (issue 37, item 6): a German
 * browser checks a sealed PDF on /verify-document and reads the answer in German; an Arabic visitor
 * gets /verify/<token> right to left, asks for a code and is told a wrong one in Arabic. Both at 1280
 * and 375 px, axe-clean, screenshots under test-artifacts/i18n-verify-*.png.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { BrowserContextOptions } from 'playwright-core';
import { bearer, createTestApp, type TestApp } from '../harness.js';
import { createEnvelope, drain, person, recipientToken, signAs, uniq } from '../fixtures/envelopes.js';
import { artifactPath, assertPageFitsAndIsAccessible, freePort, launchChromium, watchPage } from './helpers.js';

const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

describe('verification pages in German and Arabic in Chromium', () => {
  let t: TestApp;
  let base: string;
  let sealed: Buffer;
  const browsers: { close: () => Promise<void> }[] = [];

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_URL: base } });
    const a = person('i18n-a', 'SIGNER', { name: 'Anna Schmidt' });
    const env = await createEnvelope(t, { title: 'Rahmenvertrag', recipients: [a] });
    await drain(t);
    await signAs(t, recipientToken(env, a.email));
    await drain(t);
    sealed = (await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) })).rawPayload;
    await t.app.listen({ host: '127.0.0.1', port });
  });
  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
  });

  const open = async (options: BrowserContextOptions, locale: string) => {
    const browser = await launchChromium({ ...options, locale });
    browsers.push(browser);
    return browser.context.newPage();
  };

  for (const [width, options] of [[1280, DESKTOP], [375, PHONE]] as const) {
    test(`at ${width} px: a German browser checks a sealed PDF and reads the answer in German`, async () => {
      const page = await open(options, 'de-DE');
      const problems = await watchPage(page, '/verify-document');
      await page.goto(`${base}/verify-document`);
      await page.locator('[data-testid="vd-app"][data-ready="true"]').waitFor();
      assert.equal(await page.evaluate(() => document.documentElement.lang), 'de');
      await page.setInputFiles('[data-testid="vd-file"]', { name: 'rahmenvertrag.pdf', mimeType: 'application/pdf', buffer: sealed });
      await page.locator('[data-testid="vd-result"]').waitFor();
      assert.equal(await page.getByTestId('vd-verdict').innerText(), 'Von diesem Server versiegelt und unverändert');
      assert.match(await page.getByTestId('vd-summary').innerText(), /^Von diesem Server am .+ versiegelt und seitdem unverändert\.$/);
      const details = await page.locator('#vd-details').innerText();
      for (const label of ['Dokument', 'Umschlag', 'Abgeschlossen', 'Signatur', 'Stufe']) assert.match(details, new RegExp(label));
      assert.match(await page.getByTestId('vd-signers').innerText(), /Unterschrieben .*UTC/);
      await assertPageFitsAndIsAccessible(page, 'verify-document (de, sealed)', width);
      await page.screenshot({ path: artifactPath(`i18n-verify-document-de-${width}.png`), fullPage: true });
      assert.deepEqual(problems, []);
    });

    test(`at ${width} px: an Arabic visitor gets the identity page right to left, and a wrong code is told in Arabic`, async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/verifications',
        headers: { ...bearer(t.customer.apiKey), 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
        payload: JSON.stringify({ type: 'email', email: uniq('omar'), name: 'عمر' }),
      });
      const url = new URL(res.json().verificationUrl);
      const page = await open(options, 'en-US');
      const problems = await watchPage(page, '/verify/', /status of 4\d\d/);
      await page.goto(`${base}${url.pathname}?lang=ar`);
      await page.locator('[data-testid="verify-app"][data-ready="true"]').waitFor();
      assert.deepEqual(await page.evaluate(() => [document.documentElement.lang, document.documentElement.dir, getComputedStyle(document.querySelector('h1')!).direction]), ['ar', 'rtl', 'rtl']);
      await assertPageFitsAndIsAccessible(page, 'verify (ar, ask)', width);
      await page.screenshot({ path: artifactPath(`i18n-verify-ar-ask-${width}.png`), fullPage: true });
      await page.getByTestId('send-code').click();
      await page.getByTestId('panel-enter').waitFor();
      assert.match(await page.getByTestId('resend-code').innerText(), /أرسل رمزًا جديدًا/);
      await page.getByTestId('code-input').fill('000000');
      await page.getByTestId('confirm-code').click();
      await page.getByTestId('verify-error').waitFor();
      assert.match(await page.getByTestId('verify-error').innerText(), /^هذا الرمز غير صحيح\. بقيت 4 محاولات\.$/);
      await assertPageFitsAndIsAccessible(page, 'verify (ar, wrong code)', width);
      await page.screenshot({ path: artifactPath(`i18n-verify-ar-wrong-${width}.png`), fullPage: true });
      assert.deepEqual(problems, []);
    });
  }
});
