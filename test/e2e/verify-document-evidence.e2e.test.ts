// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
/**
 * The verification page shows the evidence of a B-LTA seal (test CA, local TSA and OCSP: test/fixtures/pki.ts):
 * the TSA's time and name, the level, the revocation data and the document timestamp, at 1280 and 375 px,
 * axe-clean, with screenshots under test-artifacts/verify-document-evidence-*.png.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrowserContextOptions } from 'playwright-core';
import { bearer, createTestApp, type TestApp } from '../harness.js';
import { createEnvelope, drain, person, recipientToken, signAs } from '../fixtures/envelopes.js';
import { PKI_PASS, startTestPki, type TestPki } from '../fixtures/pki.js';
import { artifactPath, assertPageFitsAndIsAccessible, freePort, launchChromium, watchPage } from './helpers.js';

const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

describe('document verification page: the evidence of a B-LTA seal', () => {
  let t: TestApp;
  let pki: TestPki;
  let base: string;
  let sealed: Buffer;
  const browsers: { close: () => Promise<void> }[] = [];

  before(async () => {
    pki = await startTestPki();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_URL: base, SIGNING_CERT_P12_PATH: pki.signerP12, SIGNING_CERT_PASSPHRASE: PKI_PASS, SIGNING_TSA_URL: pki.tsaUrl, SIGNING_PADES_LEVEL: 'B-LTA' } });
    const a = person('vdx-a', 'SIGNER', { name: 'Alice Martin' });
    const env = await createEnvelope(t, { title: 'Archived agreement', recipients: [a] });
    await drain(t);
    await signAs(t, recipientToken(env, a.email));
    await drain(t);
    const dl = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(dl.statusCode, 200, dl.body);
    sealed = dl.rawPayload;
    await t.app.listen({ host: '127.0.0.1', port });
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
    await pki?.close();
  });

  for (const [width, options] of [[1280, DESKTOP], [375, PHONE]] as const) {
    test(`at ${width} px: time from the TSA, level, revocation data, document timestamp`, async () => {
      const browser = await launchChromium(options);
      browsers.push(browser);
      const page = await browser.context.newPage();
      const problems = await watchPage(page, '/verify-document');
      await page.goto(`${base}/verify-document`);
      await page.locator('[data-testid="vd-app"][data-ready="true"]').waitFor();
      await page.setInputFiles('[data-testid="vd-file"]', { name: 'archived-agreement.pdf', mimeType: 'application/pdf', buffer: sealed });
      await page.locator('[data-testid="vd-result"]').waitFor();
      assert.equal(await page.locator('[data-testid="vd-verdict"]').innerText(), 'Sealed by this server and unchanged');
      const details = await page.locator('#vd-details').innerText();
      assert.match(details, /Signed at\s+.*UTC.*: trusted time from Signet Test TSA/);
      assert.match(details, /PAdES B-LTA/);
      assert.match(details, /Revocation data\s+\d+ OCSP responses, 0 CRLs and \d+ certificates embedded/);
      assert.match(details, /Document timestamps\s+1; latest .* from Signet Test TSA/);
      assert.match(details, /validation data or timestamps were added after it, as sealed/);
      await assertPageFitsAndIsAccessible(page, 'verify-document (B-LTA evidence)', width);
      await page.screenshot({ path: artifactPath(`verify-document-evidence-${width}.png`), fullPage: true });
      assert.deepEqual(problems, []);
    });
  }
});
