// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import type { BrowserContext, Page } from 'playwright-core';
import type { TestApp } from '../harness.js';
import { artifactPath, consentIfAsked, assertPageFitsAndIsAccessible, contractPdf, launchChromium, startBrowserApp, waitFor, watchPage, type Api } from './helpers.js';

/**
 * The guided flow of the signing page, driven by the keyboard alone (Tab, Shift+Tab, Enter, Space,
 * Escape and typing; no clicks), in Chromium at 1280 px and on a 375 px phone: Start/Next go from one
 * required field to the next and open the signature dialog on a signature field, the progress count
 * moves, Finish is unavailable until every required field is done, a small field is zoomed to 44 px on
 * the phone and the dialog fills its screen, focus comes back after the dialog, axe-core finds nothing
 * serious, and once the envelope is sealed the page offers "Download your copy". redirectUrl is
 * followed only when it is http(s).
 */
describe('guided signing with the keyboard', () => {
  let t: TestApp;
  let api: Api;
  let base: string;
  const browsers: { close: () => Promise<void> }[] = [];

  const field = (type: string, email: string, x: number, y: number, w: number, h: number, extra: object = {}) => ({
    type,
    recipientEmail: email,
    page: 1,
    positionXPercent: x,
    positionYPercent: y,
    widthPercent: w,
    heightPercent: h,
    ...extra,
  });

  before(async () => {
    ({ t, base, api } = await startBrowserApp());
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
  });

  const testIdOfFocus = (page: Page) => page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? document.activeElement?.tagName ?? null);

  /** Presses `key` until the element with `testid` has focus, as a person tabbing along would. */
  async function keyTo(page: Page, testid: string, key: 'Tab' | 'Shift+Tab' = 'Tab', max = 25): Promise<void> {
    const seen: (string | null)[] = [];
    for (let i = 0; i < max; i++) {
      await page.keyboard.press(key);
      const now = await testIdOfFocus(page);
      if (now === testid) {
        // Focus is visible wherever the keyboard puts it (WCAG 2.4.7).
        assert.ok(await page.evaluate(() => document.activeElement!.matches(':focus-visible')), `${testid} shows its focus`);
        return;
      }
      seen.push(now);
    }
    assert.fail(`${key} never reached ${testid}; went through ${seen.join(', ')}`);
  }

  async function openSigningPage(page: Page, url: string): Promise<{ fields: { fieldId: number; type: string }[] }> {
    await page.goto(url);
    await consentIfAsked(page);
    await page.locator('#signing-app[data-ready="true"]').waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
    // Reading the session is no interaction: it gives the test the field ids.
    return page.evaluate(async () => (await fetch(location.pathname + '/session')).json());
  }

  const progressOf = async (page: Page) => (await page.getByTestId('progress').textContent()) ?? '';
  const finishDisabled = async (page: Page) => (await page.getByTestId('finish-button').getAttribute('aria-disabled')) === 'true';

  /** The focused element is on screen, clear of the sticky action bar, and (on a phone) at least 44 px tall. */
  async function assertFocusedFieldUsable(page: Page, testid: string, width: number): Promise<void> {
    assert.equal(await testIdOfFocus(page), testid);
    const box = await waitFor(`${testid} on screen`, async () => {
      const r = await page.evaluate(() => {
        const rect = document.activeElement!.getBoundingClientRect();
        const bar = document.getElementById('action-bar')!.getBoundingClientRect();
        return { top: rect.top, bottom: rect.bottom, left: rect.left, right: rect.right, height: rect.height, barTop: bar.top, vw: innerWidth };
      });
      // A field wider than the screen (zoomed on a phone) shows its start, where the typing goes.
      const across = r.right - r.left <= r.vw ? r.left >= 0 && r.right <= r.vw : r.left >= 0 && r.left <= 16;
      const visible = r.top >= 0 && r.bottom <= r.barTop && across;
      return { done: visible ? r : undefined, seen: r };
    }, 5_000);
    if (width < 500) assert.ok(box.height >= 44, `${testid} is ${box.height.toFixed(1)} px tall at ${width} px`);
  }

  /** What axe-core checks by default, plus the WCAG 2.2 target-size rule it leaves off. */
  async function assertAccessible(page: Page, label: string, width: number): Promise<void> {
    await assertPageFitsAndIsAccessible(page, label, width);
    const targets = await page.evaluate(async () => {
      const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }> } }).axe;
      const { violations } = await axe.run(document, { runOnly: { type: 'rule', values: ['target-size'] } });
      return violations.flatMap((v) => v.nodes.map((n) => n.target.join(' ')));
    });
    assert.deepEqual(targets, [], `${label} at ${width} px: targets under 24 x 24 px`);
  }

  /** Waits for "Download your copy", takes it with Enter, and checks it is the sealed PDF the API serves. */
  async function downloadCopy(page: Page, envelopeId: string, title: string, key: 'Tab' | 'Shift+Tab'): Promise<void> {
    await page.getByTestId('download-copy-link').waitFor({ timeout: 60_000 });
    await keyTo(page, 'download-copy-link', key, 6);
    const [download] = await Promise.all([page.waitForEvent('download'), page.keyboard.press('Enter')]);
    assert.equal(download.suggestedFilename(), `${title} - signed.pdf`);
    const copy = readFileSync((await download.path())!);
    const sealed = await api.download(`/v1/envelopes/${envelopeId}/download`);
    assert.equal(sealed.status, 200);
    assert.ok(Buffer.compare(copy, Buffer.from(sealed.bytes)) === 0, 'the copy is the sealed PDF');
  }

  async function browserAt(width: number): Promise<BrowserContext> {
    const b =
      width < 500
        ? await launchChromium({ viewport: { width, height: 667 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true })
        : await launchChromium({ viewport: { width, height: 900 } });
    browsers.push(b);
    return b.context;
  }

  test('a redirectUrl that is not http(s) is refused when the envelope is created or sent', async () => {
    const signer = { email: 'redirect@example.com', name: 'Rita Redirect', role: 'SIGNER' };
    for (const redirectUrl of ['javascript:alert(document.cookie)', 'JavaScript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'ftp://example.com/done', 'vbscript:msgbox(1)']) {
      const res = await api.createEnvelope(await contractPdf(), {
        title: 'Redirect check',
        recipients: [signer],
        fields: [field('SIGNATURE', signer.email, 10, 70, 30, 6)],
        meta: { redirectUrl },
      });
      assert.equal(res.status, 400, `${redirectUrl}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, 'VALIDATION_ERROR');
      assert.match(JSON.stringify(res.body.details), /redirectUrl/);
    }
    const draft = await api.createEnvelope(await contractPdf(), { title: 'Redirect draft', recipients: [signer], fields: [field('SIGNATURE', signer.email, 10, 70, 30, 6)], draft: true });
    assert.equal(draft.status, 201, JSON.stringify(draft.body));
    const send = await fetch(`${base}/v1/envelopes/${draft.body.envelopeId}/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.customer.apiKey}`, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
      body: JSON.stringify({ meta: { redirectUrl: 'javascript:alert(1)' } }),
    });
    assert.equal(send.status, 400);
    assert.equal(((await send.json()) as { code: string }).code, 'VALIDATION_ERROR');
  });

  for (const width of [1280, 375]) {
    test(`signature + text, keyboard only, at ${width} px`, async () => {
      const phone = width < 500;
      const alice = { email: `alice-${width}@example.com`, name: 'Alice Able' };
      const title = `Consulting agreement ${width}`;
      const created = await api.createEnvelope(await contractPdf(), {
        title,
        recipients: [{ ...alice, role: 'SIGNER' }],
        // The text field as short as a marker-placed one: about 12 px on the phone before zooming.
        fields: [field('SIGNATURE', alice.email, 8, 66, 36, 8), field('TEXT', alice.email, 8, 34, 36, 2.5)],
        // On the desktop a real page to go on to; on the phone one that is not http(s), planted in the
        // database as no API call can store it: the page must never follow it.
        meta: phone ? undefined : { redirectUrl: `${base}/health` },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      if (phone) {
        await t.container.db.execute(sql`UPDATE engine_documents SET meta = meta || '{"redirectUrl":"javascript:alert(1)"}'::jsonb WHERE title = ${title}`);
      }
      const envelopeId: string = created.body.envelopeId;
      const link: string = created.body.recipients[0].signingUrl;

      const page = await (await browserAt(width)).newPage();
      const problems = await watchPage(page);
      const session = await openSigningPage(page, link);
      const sigId = session.fields.find((f) => f.type === 'SIGNATURE')!.fieldId;
      const textId = session.fields.find((f) => f.type === 'TEXT')!.fieldId;

      assert.equal(await progressOf(page), '0 of 2 required fields done');
      assert.equal(await finishDisabled(page), true, 'Finish is unavailable until the fields are done');
      assert.equal(await page.getByTestId('next-field-button').textContent(), 'Start');
      await assertAccessible(page, 'signing page', width);
      await page.screenshot({ path: artifactPath(`signing-guided-${width}-start.png`) });

      // Start is the first stop after the header's download link.
      await keyTo(page, 'next-field-button', 'Tab', 3);
      await page.keyboard.press('Enter');
      // The text field comes first (it is higher on the page): focused, and zoomed to 44 px on a phone.
      await assertFocusedFieldUsable(page, `field-${textId}`, width);
      if (phone) assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), width, 'zoomed pages scroll inside the document, not the page');
      await page.screenshot({ path: artifactPath(`signing-guided-${width}-text-focused.png`) });
      await page.keyboard.type('Acme Corporation');
      assert.equal(await progressOf(page), '1 of 2 required fields done');
      assert.equal(await finishDisabled(page), true);

      // Enter moves on: the signature field, whose dialog opens on Type (a keyboard cannot draw).
      await page.keyboard.press('Enter');
      const dialog = page.getByTestId('signature-dialog');
      await dialog.waitFor({ state: 'visible' });
      assert.equal(await page.getByTestId('signature-tab-type').getAttribute('aria-selected'), 'true');
      assert.equal(await testIdOfFocus(page), 'signature-tab-type');
      if (phone) {
        const box = (await dialog.boundingBox())!;
        assert.deepEqual([box.x, box.y, box.width, box.height].map(Math.round), [0, 0, width, 667], 'the dialog is the whole phone screen');
      }
      await assertAccessible(page, 'signature dialog', width);
      await page.screenshot({ path: artifactPath(`signing-guided-${width}-dialog.png`) });

      await keyTo(page, 'signature-type-input', 'Tab', 2);
      assert.equal(await page.getByTestId('signature-type-input').inputValue(), 'Alice Able', 'the name is offered');
      await page.keyboard.press('Enter');
      await dialog.waitFor({ state: 'hidden' });
      assert.equal(await testIdOfFocus(page), `field-${sigId}`, 'focus is back on the field the dialog was opened for');
      assert.match((await page.getByTestId(`field-${sigId}`).locator('img').getAttribute('src')) ?? '', /^data:image\/png;base64,/);
      assert.equal(await progressOf(page), '2 of 2 required fields done');
      assert.equal(await finishDisabled(page), false);
      assert.equal(await page.getByTestId('next-field-button').isVisible(), false, 'nothing left to go to');
      await page.screenshot({ path: artifactPath(`signing-guided-${width}-filled.png`), fullPage: !phone });

      // Back to Finish (the action bar comes before the document in Tab order).
      await keyTo(page, 'finish-button', 'Shift+Tab', 4);
      const finishedAt = Date.now();
      await page.keyboard.press('Enter');
      await page.locator('#signing-app[data-outcome="done"]').waitFor();
      assert.match((await page.getByTestId('done-text').textContent()) ?? '', new RegExp(`You signed “${title}”`));
      assert.equal(await testIdOfFocus(page), 'status-banner', 'focus moves to what happened');

      if (!phone) {
        // The sender's page is offered, and the person may stay (WCAG 2.2.1: a timed move can be stopped).
        assert.match((await page.getByTestId('redirect-note').textContent()) ?? '', /Taking you on to 127\.0\.0\.1:\d+ in 6 seconds/);
        assert.equal(await page.getByTestId('redirect-link').getAttribute('href'), `${base}/health`);
        await keyTo(page, 'redirect-stay', 'Tab', 4);
        await page.keyboard.press('Enter');
        assert.equal(await testIdOfFocus(page), 'redirect-link');
        await downloadCopy(page, envelopeId, title, 'Shift+Tab');
      } else {
        assert.equal(await page.getByTestId('redirect-link').count(), 0, 'a javascript: redirectUrl is not offered');
        await downloadCopy(page, envelopeId, title, 'Tab');
      }
      await assertAccessible(page, 'post-sign page', width);
      await page.screenshot({ path: artifactPath(`signing-guided-${width}-done.png`), fullPage: !phone });
      // Past the redirect's delay: still here (stayed on the desktop; never followed on the phone).
      await sleep(Math.max(0, finishedAt + 7_000 - Date.now()));
      assert.match(new URL(page.url()).pathname, /^\/sign\//);

      assert.deepEqual(problems, []);
    });

    test(`signature + date + checkbox, keyboard only, at ${width} px`, async () => {
      const phone = width < 500;
      const bea = { email: `bea-${width}@example.com`, name: 'Bea Brown' };
      const title = `Delivery receipt ${width}`;
      const created = await api.createEnvelope(await contractPdf(), {
        title,
        recipients: [{ ...bea, role: 'SIGNER' }],
        fields: [
          field('SIGNATURE', bea.email, 8, 66, 36, 8),
          field('DATE', bea.email, 53, 70, 25, 2.5),
          field('CHECKBOX', bea.email, 8, 40, 2.5, 1.9, { required: true }),
        ],
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const envelopeId: string = created.body.envelopeId;

      const page = await (await browserAt(width)).newPage();
      const problems = await watchPage(page);
      const session = await openSigningPage(page, created.body.recipients[0].signingUrl);
      const id = (type: string) => session.fields.find((f) => f.type === type)!.fieldId;

      // The date fills itself in: not counted, not a stop of the guide.
      assert.match((await page.getByTestId(`field-${id('DATE')}`).textContent()) ?? '', /^\d{4}-\d{2}-\d{2}$/);
      assert.equal(await progressOf(page), '0 of 2 required fields done');
      assert.equal(await finishDisabled(page), true);

      await keyTo(page, 'next-field-button', 'Tab', 3);
      await page.keyboard.press('Enter');
      // The checkbox is focused, not ticked: only the person ticks it (Space).
      await assertFocusedFieldUsable(page, `field-${id('CHECKBOX')}`, width);
      assert.equal(await page.getByTestId(`field-${id('CHECKBOX')}`).isChecked(), false);
      await page.screenshot({ path: artifactPath(`signing-guided-${width}-checkbox.png`) });
      await page.keyboard.press('Space');
      assert.equal(await page.getByTestId(`field-${id('CHECKBOX')}`).isChecked(), true);
      assert.equal(await progressOf(page), '1 of 2 required fields done');

      // Finish, still unavailable, explains itself when pressed: the missing field is marked and focused.
      await keyTo(page, 'finish-button', 'Shift+Tab', 3);
      assert.equal(await finishDisabled(page), true);
      await page.keyboard.press('Enter');
      assert.equal(await page.getByTestId(`field-error-${id('SIGNATURE')}`).textContent(), 'Sign here');
      assert.match((await page.getByTestId('status-banner').textContent()) ?? '', /One field needs your attention/);
      assert.equal(await testIdOfFocus(page), `field-${id('SIGNATURE')}`);

      // Next (now called so) opens the signature dialog; Escape closes it and focus comes back.
      assert.equal(await page.getByTestId('next-field-button').textContent(), 'Next');
      await keyTo(page, 'next-field-button', 'Shift+Tab', 6);
      await page.keyboard.press('Enter');
      const dialog = page.getByTestId('signature-dialog');
      await dialog.waitFor({ state: 'visible' });
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      assert.equal(await testIdOfFocus(page), `field-${id('SIGNATURE')}`);
      assert.equal(await progressOf(page), '1 of 2 required fields done');

      // Enter on the field itself opens it again; a typed name is adopted with Enter.
      await page.keyboard.press('Enter');
      await dialog.waitFor({ state: 'visible' });
      await keyTo(page, 'signature-type-input', 'Tab', 2);
      await page.keyboard.press('ControlOrMeta+A');
      await page.keyboard.type('B. Brown');
      await page.keyboard.press('Enter');
      await dialog.waitFor({ state: 'hidden' });
      assert.equal(await testIdOfFocus(page), `field-${id('SIGNATURE')}`);
      assert.equal(await page.getByTestId(`field-error-${id('SIGNATURE')}`).isVisible(), false);
      assert.equal(await progressOf(page), '2 of 2 required fields done');
      assert.equal(await finishDisabled(page), false);
      await page.screenshot({ path: artifactPath(`signing-guided-${width}-date-filled.png`), fullPage: !phone });

      await keyTo(page, 'finish-button', 'Shift+Tab', 4);
      await page.keyboard.press('Enter');
      await page.locator('#signing-app[data-outcome="done"]').waitFor();
      await downloadCopy(page, envelopeId, title, 'Tab');

      // Opened again later, the link says it is done and offers the copy too.
      await openSigningPage(page, created.body.recipients[0].signingUrl);
      await page.getByTestId('download-copy-link').waitFor();
      assert.match((await page.getByTestId('status-banner').textContent()) ?? '', /completed by everyone/);

      assert.deepEqual(problems, []);
    });
  }
});
