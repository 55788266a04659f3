// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestApp } from '../harness.js';
import * as fx from '../fixtures/pdfs.js';
import { assertPageFitsAndIsAccessible, consentIfAsked, contractPdf, launchChromium, startBrowserApp, watchPage, type Api } from './helpers.js';

const SHOTS = '/tmp/shots';
const shot = (name: string) => {
  mkdirSync(SHOTS, { recursive: true });
  return path.join(SHOTS, `attachments-${name}.png`);
};

/**
 * A FILE field on the signing page in a real Chromium against the real server: the picker refuses a
 * decompression bomb with an announced message, takes a PDF and shows its name and size, and the
 * page stays axe-clean and fits at 1280 and 375 px.
 */
describe('FILE field on the signing page in Chromium', () => {
  let t: TestApp;
  let api: Api;
  const browsers: { close: () => Promise<void> }[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-attach-e2e-'));
  let goodPdf: string;
  let bombPdf: string;

  before(async () => {
    ({ t, api } = await startBrowserApp({ env: { PDF_PARSE_MAX_MEMORY_MB: '64' } }));
    goodPdf = path.join(dir, 'Passport scan.pdf');
    writeFileSync(goodPdf, await fx.plainPdf(1, 'Passport'));
    bombPdf = path.join(dir, 'harmless.pdf');
    writeFileSync(bombPdf, await fx.deflateBombPdf(128));
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
  });

  for (const width of [1280, 375]) {
    test(`at ${width} px: a bomb is refused with an alert, a PDF is attached, axe-clean`, async () => {
      const signer = { email: `file-${width}@example.com`, name: 'Fatima Reyes' };
      const created = await api.createEnvelope(await contractPdf(), {
        title: 'Services agreement',
        recipients: [{ ...signer, role: 'SIGNER' }],
        fields: [
          { type: 'FILE', recipientEmail: signer.email, page: 1, positionXPercent: 10, positionYPercent: 40, widthPercent: 40, heightPercent: 4 },
          { type: 'SIGNATURE', recipientEmail: signer.email, page: 1, positionXPercent: 10, positionYPercent: 70, widthPercent: 30, heightPercent: 6 },
        ],
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const link = created.body.recipients[0].signingUrl as string;
      const fileId = created.body.fields.find((f: { type: string }) => f.type === 'FILE').fieldId as number;

      const browser = await launchChromium({ viewport: { width, height: width > 600 ? 900 : 740 } });
      browsers.push(browser);
      const page = await browser.context.newPage();
      // The refused upload answers 422: the browser logs the failed request, which is expected here.
      const problems = await watchPage(page, '/sign/', /status of 422/);
      await page.goto(link);
      await consentIfAsked(page);
      await page.locator('#signing-app[data-ready="true"]').waitFor({ timeout: 60_000 });

      const button = page.getByTestId(`field-${fileId}`);
      assert.match((await button.textContent()) ?? '', /Attach a file/);

      // The bomb: refused, the message announced.
      const chooser1 = page.waitForEvent('filechooser');
      await button.click();
      await (await chooser1).setFiles(bombPdf);
      const error = page.getByTestId(`field-error-${fileId}`);
      await error.waitFor({ state: 'visible', timeout: 60_000 });
      assert.equal(await error.getAttribute('role'), 'alert');
      assert.match((await error.textContent()) ?? '', /cannot be accepted/);
      assert.equal(await button.getAttribute('aria-invalid'), 'true');
      await page.screenshot({ path: shot(`${width}-bomb`) });

      // The PDF: taken, its name and size shown.
      const chooser2 = page.waitForEvent('filechooser');
      await button.click();
      await (await chooser2).setFiles(goodPdf);
      await page.waitForFunction((id) => /Attached: Passport scan\.pdf/.test(document.querySelector(`[data-testid="field-${id}"]`)?.textContent ?? ''), fileId, { timeout: 60_000 });
      assert.match((await button.textContent()) ?? '', /Attached: Passport scan\.pdf \(\d+(\.\d)? (B|byte|kB|KB)/);
      assert.equal(await error.isVisible(), false);
      await button.scrollIntoViewIfNeeded();
      await page.screenshot({ path: shot(`${width}-attached`) });
      await assertPageFitsAndIsAccessible(page, 'signing page with a FILE field', width);

      const listed = await api.json<{ attachments: { name: string; fieldId: number }[] }>('GET', `/v1/envelopes/${created.body.envelopeId}/attachments`);
      assert.deepEqual(listed.body.attachments.map((a) => [a.fieldId, a.name]), [[fileId, 'Passport scan.pdf']]);
      assert.deepEqual(problems, []);
    });
  }
});
