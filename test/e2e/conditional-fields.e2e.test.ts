// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { TestApp } from '../harness.js';
import { artifactPath, assertPageFitsAndIsAccessible, consentIfAsked, contractPdf, drawOnCanvas, launchChromium, startBrowserApp, waitFor, watchPage, type Api } from './helpers.js';

/**
 * Conditional fields on the signing page (issue 37.5), in Chromium at 1280 px and on a 375 px phone: a
 * required TEXT field shown only when a checkbox is ticked appears and disappears live, counts in the
 * progress only while shown, shows its label and placeholder, and refuses a value its pattern refuses
 * with a message read out (role=alert); a sender's read-only value is shown and cannot be typed over.
 * The page is axe-clean in each state; what was signed is what the server stamped.
 */
describe('conditional fields on the signing page', () => {
  let t: TestApp;
  let api: Api;
  const browsers: { close: () => Promise<void> }[] = [];
  const box = (x: number, y: number, w: number, h: number) => ({ page: 1, positionXPercent: x, positionYPercent: y, widthPercent: w, heightPercent: h });

  before(async () => {
    ({ t, api } = await startBrowserApp());
  });
  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
  });

  async function envelope(email: string) {
    const res = await api.createEnvelope(await contractPdf(), {
      title: 'Services agreement',
      recipients: [{ email, name: 'Casey Client', role: 'SIGNER' }],
      fields: [
        { type: 'SIGNATURE', recipientEmail: email, ...box(8, 68, 30, 6) },
        { type: 'CHECKBOX', recipientEmail: email, ref: 'po', required: false, ...box(8, 20, 3, 2.5) },
        { type: 'TEXT', recipientEmail: email, ref: 'poNumber', label: 'Purchase order number', placeholder: 'PO-12345', validation: { pattern: 'PO-[0-9]{5}' }, visibleWhen: { fieldId: 'po', equals: true }, ...box(14, 20, 30, 4) },
        { type: 'TEXT', recipientEmail: email, label: 'Company', readOnly: true, value: 'Acme Ltd', ...box(8, 32, 30, 4) },
      ],
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const fields = res.body.fields as { fieldId: number; ref?: string; type: string }[];
    const id = (ref: string) => fields.find((f) => f.ref === ref)!.fieldId;
    return {
      envelopeId: res.body.envelopeId as string,
      link: res.body.recipients[0].signingUrl as string,
      ids: { signature: fields.find((f) => f.type === 'SIGNATURE')!.fieldId, po: id('po'), poNumber: id('poNumber'), company: fields.find((f) => f.type === 'TEXT' && !f.ref)!.fieldId },
    };
  }

  async function open(page: Page, url: string) {
    await page.goto(url);
    await consentIfAsked(page);
    await page.locator('#signing-app[data-ready="true"]').waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
  }

  async function sign(page: Page, signatureId: number) {
    await page.getByTestId(`field-${signatureId}`).click();
    const dialog = page.getByTestId('signature-dialog');
    await dialog.waitFor({ state: 'visible' });
    await drawOnCanvas(page, '[data-testid="signature-draw-canvas"]');
    await page.getByTestId('signature-apply').click();
    await dialog.waitFor({ state: 'hidden' });
  }

  const progressOf = async (page: Page) => (await page.getByTestId('progress').textContent()) ?? '';

  for (const viewport of [{ width: 1280, height: 900 }, { width: 375, height: 667 }]) {
    test(`the field appears when its box is ticked and is required only then (${viewport.width} px)`, async () => {
      const { context, close } = await launchChromium({ viewport });
      browsers.push({ close });
      const page = await context.newPage();
      const problems = await watchPage(page);
      const { envelopeId, link, ids } = await envelope(`casey-${viewport.width}@example.com`);
      await open(page, link);

      // Hidden at first: not shown, not counted.
      const poBox = page.getByTestId(`field-box-${ids.poNumber}`);
      assert.equal(await poBox.isVisible(), false);
      assert.equal(await progressOf(page), '0 of 1 required field done');
      // The sender's value: shown, fixed.
      const company = page.getByTestId(`field-${ids.company}`);
      assert.equal(await company.inputValue(), 'Acme Ltd');
      assert.equal(await company.getAttribute('readonly'), '');
      await assertPageFitsAndIsAccessible(page, 'conditional field hidden', viewport.width);

      // Ticked: shown, with its label and placeholder, and now required.
      await page.getByTestId(`field-${ids.po}`).check();
      await poBox.waitFor({ state: 'visible' });
      assert.equal(await page.getByTestId(`field-${ids.poNumber}`).getAttribute('placeholder'), 'PO-12345');
      assert.equal(await poBox.locator('.field-label').textContent(), 'Purchase order number');
      assert.equal(await progressOf(page), '0 of 2 required fields done');

      // A value its pattern refuses: the message is an alert, shown when Finish is pressed.
      await sign(page, ids.signature);
      await page.getByTestId(`field-${ids.poNumber}`).fill('12345');
      await page.getByTestId('finish-button').click({ force: true });
      const error = page.getByTestId(`field-error-${ids.poNumber}`);
      assert.equal(await error.getAttribute('role'), 'alert');
      assert.equal(await error.textContent(), 'Use the format this field asks for');
      await assertPageFitsAndIsAccessible(page, 'conditional field shown, invalid', viewport.width);
      await page.screenshot({ path: artifactPath(`conditional-fields-${viewport.width}.png`), fullPage: viewport.width > 1000 });

      // Unticked again: hidden, and no longer needed; ticked and filled well: done.
      await page.getByTestId(`field-${ids.po}`).uncheck();
      await poBox.waitFor({ state: 'hidden' });
      assert.equal(await progressOf(page), '1 of 1 required field done');
      await page.getByTestId(`field-${ids.po}`).check();
      await page.getByTestId(`field-${ids.poNumber}`).fill('PO-12345');
      assert.equal(await progressOf(page), '2 of 2 required fields done');
      await page.getByTestId('finish-button').click();
      await page.locator('#signing-app[data-outcome="done"]').waitFor();
      assert.deepEqual(problems, []);

      const done = await waitFor('COMPLETED', async () => {
        const s = await api.json<{ status: string }>('GET', `/v1/envelopes/${envelopeId}/status`);
        return { done: s.body.status === 'COMPLETED' ? s.body : undefined, seen: s.body.status };
      });
      assert.equal(done.status, 'COMPLETED');
    });
  }
});
