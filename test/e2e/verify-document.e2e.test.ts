// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
/**
 * The public document verification page in a real Chromium against the real server over HTTP: a PDF
 * sealed through the real flow is chosen with the file input and recognised (title, signers); a copy
 * changed after sealing and an unrelated PDF (dropped on the page) are not taken for it. At 1280 and
 * 375 px, with axe-core, and screenshots under test-artifacts/verify-document-*.png.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { bearer, createTestApp, type TestApp } from '../harness.js';
import { createEnvelope, drain, person, recipientToken, signAs } from '../fixtures/envelopes.js';
import { plainPdf } from '../fixtures/pdfs.js';
import { artifactPath, assertPageFitsAndIsAccessible, freePort, launchChromium, watchPage } from './helpers.js';

const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

describe('document verification page in Chromium', () => {
  let t: TestApp;
  let base: string;
  let sealed: Buffer;
  const browsers: { close: () => Promise<void> }[] = [];

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { PUBLIC_URL: base } });
    const [a, b] = [person('vde-a', 'SIGNER', { name: 'Alice Martin' }), person('vde-b', 'SIGNER', { name: 'Bruno Keller' })];
    const env = await createEnvelope(t, { title: 'Services agreement', recipients: [a, b] });
    await drain(t);
    await signAs(t, recipientToken(env, a.email));
    await signAs(t, recipientToken(env, b.email));
    await drain(t);
    const dl = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(dl.statusCode, 200, dl.body);
    sealed = dl.rawPayload;
    await t.app.listen({ host: '127.0.0.1', port });
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
  });

  async function open(options: BrowserContextOptions): Promise<{ page: Page; problems: string[] }> {
    const browser = await launchChromium(options);
    browsers.push(browser);
    const page = await browser.context.newPage();
    const problems = await watchPage(page, '/verify-document');
    await page.goto(`${base}/verify-document`);
    await page.locator('[data-testid="vd-app"][data-ready="true"]').waitFor();
    return { page, problems };
  }

  const choose = (page: Page, name: string, bytes: Uint8Array) => page.setInputFiles('[data-testid="vd-file"]', { name, mimeType: 'application/pdf', buffer: Buffer.from(bytes) });

  async function verdict(page: Page): Promise<string> {
    await page.locator('[data-testid="vd-result"]').waitFor();
    return page.locator('[data-testid="vd-verdict"]').innerText();
  }

  for (const [width, options] of [[1280, DESKTOP], [375, PHONE]] as const) {
    test(`at ${width} px: the sealed PDF is recognised, a changed copy is not`, async () => {
      const { page, problems } = await open(options);
      await assertPageFitsAndIsAccessible(page, 'verify-document (choose)', width);
      await page.screenshot({ path: artifactPath(`verify-document-choose-${width}.png`), fullPage: true });

      await choose(page, 'services-agreement-signed.pdf', sealed);
      assert.equal(await verdict(page), 'Sealed by this server and unchanged');
      const details = await page.locator('#vd-details').innerText();
      assert.match(details, /Services agreement/);
      assert.deepEqual(await page.locator('[data-testid="vd-signers"] .signer-name').allInnerTexts(), ['Alice Martin', 'Bruno Keller']);
      assert.match(await page.locator('[data-testid="vd-signers"]').innerText(), /Signed .*UTC/);
      // The heading takes focus, so a screen reader announces the answer.
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'vd-verdict');
      await assertPageFitsAndIsAccessible(page, 'verify-document (sealed)', width);
      await page.screenshot({ path: artifactPath(`verify-document-sealed-${width}.png`), fullPage: true });

      // A copy with content appended after sealing.
      await page.getByTestId('vd-again').click();
      await choose(page, 'services-agreement-edited.pdf', Buffer.concat([sealed, Buffer.from('\n% edited after sealing\n')]));
      assert.equal(await verdict(page), 'Changed since it was sealed');
      assert.match(await page.getByTestId('vd-summary').innerText(), /content was added after sealing/);
      await assertPageFitsAndIsAccessible(page, 'verify-document (modified)', width);
      await page.screenshot({ path: artifactPath(`verify-document-modified-${width}.png`), fullPage: true });
      assert.deepEqual(problems, []);
    });
  }

  test('a PDF dropped on the page that this server did not seal, and a file that is no PDF', async () => {
    const { page, problems } = await open(DESKTOP);
    const other = Buffer.from(await plainPdf(1, 'Some other contract')).toString('base64');
    await page.evaluate((b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const data = new DataTransfer();
      data.items.add(new File([bytes], 'other.pdf', { type: 'application/pdf' }));
      document.getElementById('vd-drop')!.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    }, other);
    assert.equal(await verdict(page), 'Not sealed by this server');
    await assertPageFitsAndIsAccessible(page, 'verify-document (not sealed)', 1280);
    await page.screenshot({ path: artifactPath('verify-document-not-sealed-1280.png'), fullPage: true });

    await page.getByTestId('vd-again').click();
    await page.setInputFiles('[data-testid="vd-file"]', { name: 'notes.pdf', mimeType: 'application/pdf', buffer: Buffer.from('just text') });
    await page.getByTestId('vd-error').waitFor();
    assert.match(await page.getByTestId('vd-error').innerText(), /not a PDF/);
    await page.screenshot({ path: artifactPath('verify-document-error-1280.png'), fullPage: true });
    // The browser logs the 400 it was answered; that is the page working, not a problem of it.
    assert.deepEqual(problems.filter((p) => !/status of 400/.test(p)), []);
  });
});
