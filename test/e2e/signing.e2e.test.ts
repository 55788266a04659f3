// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { rowsOf } from '../../src/db/client.js';
import type { TestApp } from '../harness.js';
import { artifactPath, consentIfAsked, assertPageFitsAndIsAccessible, contractPdf, drawOnCanvas, launchChromium, run, startBrowserApp, waitFor, watchPage, type Api } from './helpers.js';

/**
 * One envelope, two signers in order, signed in a real Chromium against the real server (HTTP, worker,
 * sealing): the second signer opens early and is told to wait, then each draws a signature with the
 * mouse, fills a text field and finishes; the sealed download passes pdfsig and qpdf --check.
 */
describe('signing in Chromium', () => {
  let t: TestApp;
  let api: Api;
  let base: string;
  const browsers: { close: () => Promise<void> }[] = [];

  const alice = { email: 'alice@example.com', name: 'Alice Able' };
  const bob = { email: 'bob@example.com', name: 'Bob Baker' };
  const field = (type: string, who: { email: string }, x: number, y: number, w: number, h: number) => ({
    type,
    recipientEmail: who.email,
    page: 1,
    positionXPercent: x,
    positionYPercent: y,
    widthPercent: w,
    heightPercent: h,
  });

  before(async () => {
    ({ t, base, api } = await startBrowserApp());
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
  });

  /** Opens a signing link and waits until the document is drawn and the fields are placed. */
  async function openSigningPage(page: Page, url: string): Promise<void> {
    await page.goto(url);
    await consentIfAsked(page);
    await page.locator('#signing-app[data-ready="true"]').waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
  }

  /** Adopts a drawn signature through the dialog and fills the text field, as a person would. */
  async function signAndFill(page: Page, ids: { signature: number; text: number }, text: string): Promise<void> {
    await page.getByTestId(`field-${ids.signature}`).click();
    const dialog = page.getByTestId('signature-dialog');
    await dialog.waitFor({ state: 'visible' });
    assert.equal(await page.getByTestId('signature-tab-draw').getAttribute('aria-selected'), 'true');
    await drawOnCanvas(page, '[data-testid="signature-draw-canvas"]');
    await page.getByTestId('signature-apply').click();
    await dialog.waitFor({ state: 'hidden' });
    const img = page.getByTestId(`field-${ids.signature}`).locator('img');
    assert.match((await img.getAttribute('src')) ?? '', /^data:image\/png;base64,/);
    await page.getByTestId(`field-${ids.text}`).fill(text);
    assert.equal(await page.getByTestId('progress').textContent(), '2 of 2 required fields done');
  }

  test('the page is a static shell under a strict CSP; its assets come from our origin', async () => {
    // A well-formed token the server never issued still gets the shell: the page reads no data itself.
    const res = await t.app.inject({ url: `/sign/${'A'.repeat(43)}` });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['referrer-policy'], 'no-referrer');
    const csp = String(res.headers['content-security-policy']);
    for (const directive of ["default-src 'none'", "script-src 'self'", "worker-src 'self'", "img-src 'self' data: blob:", "frame-ancestors 'none'"]) {
      assert.ok(csp.split(';').includes(directive), `${directive} in ${csp}`);
    }
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    // The one src-less block is the page's messages: JSON, which no browser runs.
    assert.doesNotMatch(res.body, /<script(?![^>]*\s(?:src=|type="application\/json"))/, 'no inline script');
    assert.match(res.body, /<script type="application\/json" id="signet-messages">\{"signing[.-]/);
    assert.doesNotMatch(res.body, /\sstyle=/, 'no inline style');
    assert.doesNotMatch(res.body, /https?:\/\//, 'no other origin');

    const assets = [...res.body.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map((m) => `/sign/${m[1]}`);
    assert.ok(assets.some((a) => a.endsWith('/signing.js')) && assets.some((a) => a.endsWith('/signing.css')) && assets.some((a) => a.endsWith('/pdf.min.mjs')), assets.join());
    const pdfjsBase = /data-pdfjs-base="([^"]+)"/.exec(res.body)![1];
    const worker = `/sign/${pdfjsBase}pdf.worker.min.mjs`;
    for (const url of [...assets, worker]) {
      const asset = await t.app.inject({ url, headers: { 'accept-encoding': 'gzip' } });
      assert.equal(asset.statusCode, 200, url);
      assert.match(String(asset.headers['content-type']), url.endsWith('.css') ? /^text\/css/ : /^text\/javascript/, url);
      assert.match(String(asset.headers['cache-control']), /max-age=31536000, immutable/, url);
      assert.equal(asset.headers['content-encoding'], 'gzip', url);
    }
    // The worker runs under its own script's CSP: our origin, plus compiling the wasm image decoders.
    assert.match(String((await t.app.inject({ url: worker })).headers['content-security-policy']), /script-src 'self' 'wasm-unsafe-eval'/);
    assert.equal((await t.app.inject({ url: `/sign/${pdfjsBase}wasm/openjpeg.wasm` })).headers['content-type'], 'application/wasm');

    // Only listed files are served; a path never reaches the disk.
    for (const url of [`/sign/${pdfjsBase}../package.json`, `/sign/${pdfjsBase}%2e%2e/package.json`, '/sign/assets/pdfjs-0.0.0/pdf.min.mjs', '/sign/assets/signing.js']) {
      assert.equal((await t.app.inject({ url })).statusCode, 404, url);
    }
    const bad = await t.app.inject({ url: '/sign/not!a!token' });
    assert.equal(bad.statusCode, 404);
    assert.match(bad.body, /This signing link is not valid/);
  });

  test('two signers in order sign in the browser; the sealed PDF verifies', async () => {
    const created = await api.createEnvelope(await contractPdf(), {
      title: 'Services agreement',
      recipients: [
        { ...alice, role: 'SIGNER', signingOrder: 1 },
        { ...bob, role: 'SIGNER', signingOrder: 2 },
      ],
      fields: [
        field('SIGNATURE', alice, 8, 66, 36, 8),
        field('TEXT', alice, 8, 33, 36, 3.5),
        field('SIGNATURE', bob, 53, 66, 36, 8),
        field('TEXT', bob, 53, 33, 36, 3.5),
      ],
      meta: { redirectUrl: `${base}/health` },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const envelopeId: string = created.body.envelopeId;
    const linkOf = (email: string): string => created.body.recipients.find((r: { email: string }) => r.email === email).signingUrl;
    assert.ok(linkOf(alice.email).startsWith(`${base}/sign/`), linkOf(alice.email));

    const desktop = await launchChromium({ viewport: { width: 1100, height: 900 } });
    const phone = await launchChromium({ viewport: { width: 375, height: 667 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    browsers.push(desktop, phone);

    // Bob opens his link before Alice has signed: he sees whom he waits for and cannot act.
    const bobPage = await phone.context.newPage();
    const bobProblems = await watchPage(bobPage);
    await openSigningPage(bobPage, linkOf(bob.email));
    assert.equal(await bobPage.locator('#signing-app').getAttribute('data-can-act'), 'false');
    assert.match((await bobPage.getByTestId('status-banner').textContent()) ?? '', /Waiting for Alice Able <alice@example\.com> to sign first/);
    assert.equal(await bobPage.getByTestId('finish-button').isVisible(), false);
    const bobSession = await bobPage.evaluate(async () => (await fetch(location.pathname + '/session')).json());
    const bobIds = {
      signature: bobSession.fields.find((f: { type: string }) => f.type === 'SIGNATURE').fieldId as number,
      text: bobSession.fields.find((f: { type: string }) => f.type === 'TEXT').fieldId as number,
    };
    assert.equal(await bobPage.getByTestId(`field-${bobIds.text}`).isDisabled(), true);
    // The server refuses too, whatever the page shows.
    const early = await fetch(`${linkOf(bob.email)}/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fields: [] }) });
    assert.deepEqual({ status: early.status, code: ((await early.json()) as { code: string }).code }, { status: 409, code: 'NOT_YOUR_TURN' });

    // Alice signs on a desktop-sized window.
    const alicePage = await desktop.context.newPage();
    const aliceProblems = await watchPage(alicePage);
    await openSigningPage(alicePage, linkOf(alice.email));
    // pdf.js 6 draws the pages in a renderer worker of its own, off the page's thread.
    const workers = alicePage.workers().map((w) => new URL(w.url()).pathname);
    assert.ok(workers.some((p) => p.endsWith('/pdf.renderer.min.mjs')), workers.join());
    assert.equal(await alicePage.locator('#signing-app').getAttribute('data-can-act'), 'true');
    assert.equal(await alicePage.getByTestId('document-title').textContent(), 'Services agreement');
    assert.match((await alicePage.getByTestId('recipient-line').textContent()) ?? '', /Signing as Alice Able <alice@example\.com>/);
    const aliceSession = await alicePage.evaluate(async () => (await fetch(location.pathname + '/session')).json());
    const aliceIds = {
      signature: aliceSession.fields.find((f: { type: string }) => f.type === 'SIGNATURE').fieldId as number,
      text: aliceSession.fields.find((f: { type: string }) => f.type === 'TEXT').fieldId as number,
    };

    // The overlay sits where the payload put it: 8% from the left, 66% from the top, 36% x 8% of the page.
    const pageBox = (await alicePage.getByTestId('page-1').boundingBox())!;
    const sigBox = (await alicePage.getByTestId(`field-box-${aliceIds.signature}`).boundingBox())!;
    const near = (actual: number, expected: number) => assert.ok(Math.abs(actual - expected) < 0.5, `${actual.toFixed(2)}% vs ${expected}%`);
    near(((sigBox.x - pageBox.x) / pageBox.width) * 100, 8);
    near(((sigBox.y - pageBox.y) / pageBox.height) * 100, 66);
    near((sigBox.width / pageBox.width) * 100, 36);
    near((sigBox.height / pageBox.height) * 100, 8);

    // Every control a person can reach is named for assistive technology and addressable by the tests.
    const unnamed = await alicePage.evaluate(() =>
      [...document.querySelectorAll('button, input, select, textarea, [role="tab"]')]
        .filter((el) => !el.getAttribute('aria-label')?.trim() || !el.getAttribute('data-testid'))
        .map((el) => el.outerHTML.slice(0, 120)),
    );
    assert.deepEqual(unnamed, []);

    // Finishing with nothing filled is refused inline, before any request. Finish is aria-disabled until
    // then (Playwright waits on that), yet pressing it explains what is missing.
    assert.equal(await alicePage.getByTestId('finish-button').getAttribute('aria-disabled'), 'true');
    await alicePage.getByTestId('finish-button').click({ force: true });
    assert.equal(await alicePage.getByTestId(`field-error-${aliceIds.signature}`).textContent(), 'Sign here');
    assert.equal(await alicePage.getByTestId(`field-error-${aliceIds.text}`).textContent(), 'Fill in this field');
    assert.equal(await alicePage.getByTestId(`field-${aliceIds.text}`).getAttribute('aria-invalid'), 'true');

    await signAndFill(alicePage, aliceIds, 'Acme Corporation');
    assert.equal(await alicePage.getByTestId(`field-error-${aliceIds.text}`).isVisible(), false);
    await alicePage.screenshot({ path: artifactPath('signing-page.png'), fullPage: true });
    await alicePage.getByTestId('finish-button').click();
    await alicePage.locator('#signing-app[data-outcome="done"]').waitFor();
    assert.match((await alicePage.getByTestId('status-banner').textContent()) ?? '', /You signed “Services agreement”/);

    // Bob reloads: now it is his turn, on a 375x667 phone screen.
    await openSigningPage(bobPage, linkOf(bob.email));
    assert.equal(await bobPage.locator('#signing-app').getAttribute('data-can-act'), 'true');
    assert.equal(await bobPage.getByTestId('finish-button').isVisible(), true);
    assert.equal(await bobPage.evaluate(() => document.documentElement.scrollWidth), 375, 'nothing sticks out sideways on a phone');
    await signAndFill(bobPage, bobIds, 'Baker & Sons');
    await bobPage.screenshot({ path: artifactPath('signing-page-375x667.png') });
    await bobPage.getByTestId('finish-button').click();
    // meta.redirectUrl: the page sends him on after finishing.
    await bobPage.waitForURL(`${base}/health`, { timeout: 60_000 });

    assert.deepEqual(aliceProblems, []);
    assert.deepEqual(bobProblems, []);

    const completed = await waitFor('COMPLETED', async () => {
      const s = await api.json<{ status: string }>('GET', `/v1/envelopes/${envelopeId}/status`);
      if (s.body.status === 'COMPLETED') return { done: s.body, seen: null };
      // On a timeout, the jobs say why (a failed seal, a job never claimed).
      const jobs = rowsOf(await t.container.db.execute(sql`SELECT type, status, attempts, last_error FROM jobs ORDER BY id`));
      return { done: undefined, seen: { status: s.body.status, jobs } };
    });
    assert.equal(completed.status, 'COMPLETED');

    const download = await api.download(`/v1/envelopes/${envelopeId}/download`);
    assert.equal(download.status, 200);
    assert.match(download.type ?? '', /^application\/pdf/);
    const signedPath = artifactPath('signed.pdf');
    writeFileSync(signedPath, download.bytes);

    const sig = await run('pdfsig', [signedPath]);
    assert.match(sig.stdout, /Signature is Valid\./, sig.stdout + sig.stderr);
    assert.match(sig.stdout, /Total document signed/, sig.stdout);
    const check = await run('qpdf', ['--check', signedPath]);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.match(check.stdout, /No syntax or stream encoding errors found/, check.stdout);
    // The values typed in the browser are in the sealed document.
    const text = await run('pdftotext', ['-layout', signedPath, '-']);
    assert.match(text.stdout, /Acme Corporation/);
    assert.match(text.stdout, /Baker & Sons/);
  });
  test('the consent step: keyboard only, read by a screen reader, axe-clean at 375 and 1280 px; nothing can be signed before it, declining can', async () => {
    const carol = { email: 'carol@example.com', name: 'Carol Chen' };
    const dave = { email: 'dave@example.com', name: 'Dave Dunn' };
    const created = await api.createEnvelope(await contractPdf(), {
      title: 'Consulting agreement',
      recipients: [
        { ...carol, role: 'SIGNER' },
        { ...dave, role: 'SIGNER' },
      ],
      fields: [field('SIGNATURE', carol, 8, 66, 36, 8), field('SIGNATURE', dave, 53, 66, 36, 8)],
      meta: { message: 'Hi Carol, here is the agreement we discussed.\nThanks!' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const linkOf = (email: string): string => created.body.recipients.find((r: { email: string }) => r.email === email).signingUrl;
    const shot = (name: string) => (process.env.SHOTS_DIR ? `${process.env.SHOTS_DIR}/${name}.png` : artifactPath(`${name}.png`));

    const phone = await launchChromium({ viewport: { width: 375, height: 667 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    browsers.push(phone);
    const page = await phone.context.newPage();
    const problems = await watchPage(page);
    await page.goto(linkOf(carol.email));
    await page.locator('#signing-app[data-step="consent"]').waitFor({ timeout: 60_000 });
    const step = page.getByTestId('consent-step');
    await step.waitFor({ state: 'visible' });
    // Focus is on the step's heading: a screen reader starts reading there.
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'consent-title');
    assert.equal(await page.getByTestId('document').isVisible(), false, 'no document to act on before consenting');
    assert.match((await page.getByTestId('consent-text').textContent()) ?? '', /same legal effect as a handwritten signature/);
    // Who asks, and why, and by when.
    assert.equal(await page.getByTestId('sender-line').textContent(), 'Test Customer asks you to sign this document.');
    assert.match((await page.getByTestId('sender-message').textContent()) ?? '', /Hi Carol, here is the agreement we discussed\./);
    assert.match((await page.getByTestId('deadline-line').textContent()) ?? '', /^Please respond by .*\d{4}.*\d{2}:\d{2}/);
    await assertPageFitsAndIsAccessible(page, 'consent step', 375);
    await page.screenshot({ path: shot('consent-375'), fullPage: true });

    // The server refuses a signature before consent, whatever the page shows.
    const early = await fetch(`${linkOf(carol.email)}/complete`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ fields: [] }) });
    assert.deepEqual({ status: early.status, code: ((await early.json()) as { code: string }).code }, { status: 409, code: 'CONSENT_REQUIRED' });

    // Keyboard only. Tab order: the text (scrollable), the box, Decline, Agree.
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-testid'));
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'consent-text');
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'consent-check');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'consent-submit');
    // Agreeing without ticking the box: the error is announced (role=alert) and focus goes to the box.
    await page.keyboard.press('Enter');
    assert.equal(await page.getByTestId('consent-error').textContent(), 'Tick the box to agree, or decline the document.');
    assert.equal(await page.getByTestId('consent-error').getAttribute('role'), 'alert');
    assert.equal(await focused(), 'consent-check');
    assert.equal(await page.getByTestId('consent-check').getAttribute('aria-invalid'), 'true');
    await assertPageFitsAndIsAccessible(page, 'consent step with its error', 375);
    await page.screenshot({ path: shot('consent-375-error'), fullPage: true });
    await page.keyboard.press('Space');
    assert.equal(await page.getByTestId('consent-check').isChecked(), true);
    assert.equal(await page.getByTestId('consent-error').textContent(), '');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.locator('#signing-app[data-ready="true"]').waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
    assert.equal(await step.isVisible(), false);
    assert.match((await page.getByTestId('status-banner').textContent()) ?? '', /Thank you\. Review the document, then sign\./);
    assert.equal(await page.getByTestId('finish-button').isVisible(), true);
    await page.screenshot({ path: shot('consent-375-after') });
    // Recorded once: a reload goes straight to the document.
    await page.reload();
    await page.locator('#signing-app[data-ready="true"]').waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('#signing-app').getAttribute('data-step'), null);
    assert.deepEqual(problems, []);

    // Dave, on a desktop, declines from the consent step without agreeing.
    const desktop = await launchChromium({ viewport: { width: 1280, height: 900 } });
    browsers.push(desktop);
    const davePage = await desktop.context.newPage();
    const daveProblems = await watchPage(davePage);
    await davePage.goto(linkOf(dave.email));
    await davePage.getByTestId('consent-step').waitFor({ state: 'visible', timeout: 60_000 });
    await assertPageFitsAndIsAccessible(davePage, 'consent step', 1280);
    await davePage.screenshot({ path: shot('consent-1280'), fullPage: true });
    await davePage.getByTestId('consent-decline').focus();
    await davePage.keyboard.press('Enter');
    await davePage.getByTestId('reject-dialog').waitFor({ state: 'visible' });
    await davePage.keyboard.type('I will only sign on paper.');
    await davePage.getByTestId('reject-confirm').focus();
    await davePage.keyboard.press('Enter');
    await davePage.locator('#signing-app[data-outcome="done"]').waitFor();
    assert.match((await davePage.getByTestId('status-banner').textContent()) ?? '', /You declined this document/);
    assert.equal(await davePage.getByTestId('consent-step').isVisible(), false);
    assert.deepEqual(daveProblems, []);
    const after = await api.json<{ status: string; events: { eventType: string; recipientEmail: string | null }[] }>('GET', `/v1/envelopes/${created.body.envelopeId}`);
    assert.equal(after.body.status, 'REJECTED');
    assert.deepEqual(
      after.body.events.filter((e) => e.eventType === 'RECIPIENT_CONSENTED').map((e) => e.recipientEmail),
      [carol.email],
    );
  });
});
