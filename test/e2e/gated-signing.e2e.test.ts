// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { TestApp } from '../harness.js';
import { startSmtpServer, type TestSmtpServer } from '../fixtures/smtp.js';
import { artifactPath, consentIfAsked, contractPdf, drawOnCanvas, launchChromium, run, startBrowserApp, waitFor, watchPage, type Api } from './helpers.js';

/** Screenshots a person may want to look at: the code step and the document after it, desktop and phone. */
const SHOTS = '/tmp/shots';
const shot = (name: string) => {
  mkdirSync(SHOTS, { recursive: true });
  return path.join(SHOTS, `gated-${name}.png`);
};

/**
 * Verification-gated signing in a real Chromium against the real server (HTTP, worker, SMTP, sealing):
 * each gated signer opens their link, is asked for a code first, has it emailed (read from a real SMTP
 * server), enters it (a wrong one first), and only then sees the document, signs and finishes.
 */
describe('verification-gated signing in Chromium', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  let api: Api;
  let base: string;
  const browsers: { close: () => Promise<void> }[] = [];

  const alice = { email: 'maria.alvarez@example.com', name: 'Maria Alvarez' };
  const bob = { email: 'bo@example.org', name: 'Bo Chen' };
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
    smtp = await startSmtpServer();
    ({ t, base, api } = await startBrowserApp({ env: { SMTP_URL: smtp.url } }));
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
    await smtp?.close();
  });

  /** The code in the newest "verification code" mail to `email` that arrived after `since` messages. */
  async function codeFor(email: string, since: number): Promise<string> {
    const mail = await smtp.waitFor((m) => smtp.messages.indexOf(m) >= since && JSON.stringify(m.to).includes(email), 20_000);
    const code = /\b(\d{6})\b/.exec(mail.text ?? '')?.[1];
    assert.ok(code, mail.text);
    return code;
  }

  /** From the link to a signed document: the code step (wrong code, then the right one), then the signature. */
  async function verifyAndSign(page: Page, link: string, who: { email: string; name: string }, size: string): Promise<void> {
    await page.goto(link);
    const step = page.getByTestId('verify-step');
    await step.waitFor({ state: 'visible', timeout: 60_000 });
    assert.equal(await page.getByTestId('document').isVisible(), false, 'no document before the code');
    // Nor its title or whose link it is: the server sent the page neither.
    assert.equal(await page.getByTestId('document-title').textContent(), 'A document is waiting for you');
    assert.equal(await page.getByTestId('recipient-line').textContent(), '');
    assert.ok(!(await page.content()).includes('Mutual NDA'));
    const masked = `${who.email[0]}***${who.email.slice(who.email.indexOf('@'))}`;
    assert.equal(await page.getByTestId('verify-address').textContent(), masked);
    const input = page.getByTestId('verify-code');
    assert.equal(await input.getAttribute('inputmode'), 'numeric');
    assert.equal(await input.getAttribute('autocomplete'), 'one-time-code');
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), Number(size), 'nothing sticks out sideways');
    await page.screenshot({ path: shot(`${size}-code`) });

    const since = smtp.messages.length;
    await page.getByTestId('verify-send').click();
    await page.getByTestId('verify-sent').waitFor({ state: 'visible' });
    assert.match((await page.getByTestId('verify-sent').textContent()) ?? '', new RegExp(`We sent a code to ${masked.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    const code = await codeFor(who.email, since);

    await input.fill(code === '000000' ? '111111' : '000000');
    await page.getByTestId('verify-confirm').click();
    await page.getByTestId('verify-error').filter({ hasText: /4 attempts left/ }).waitFor();
    assert.equal(await input.getAttribute('aria-invalid'), 'true');
    await page.screenshot({ path: shot(`${size}-wrong-code`) });

    await input.fill(code);
    await input.press('Enter');
    await consentIfAsked(page);
    await page.locator('#signing-app[data-ready="true"]').waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
    assert.equal(await step.isVisible(), false);
    assert.match((await page.getByTestId('status-banner').textContent()) ?? '', /Email address confirmed/);
    assert.equal(await page.locator('#signing-app').getAttribute('data-can-act'), 'true');
    assert.match((await page.getByTestId('recipient-line').textContent()) ?? '', new RegExp(`Signing as ${who.name}`));
    assert.equal(await page.getByTestId('document-title').textContent(), 'Mutual NDA');

    const s = await page.evaluate(async () => (await fetch(location.pathname + '/session')).json());
    const sigId = s.fields.find((f: { type: string }) => f.type === 'SIGNATURE').fieldId as number;
    await page.getByTestId(`field-${sigId}`).click();
    await page.getByTestId('signature-dialog').waitFor({ state: 'visible' });
    await drawOnCanvas(page, '[data-testid="signature-draw-canvas"]');
    await page.getByTestId('signature-apply').click();
    await page.getByTestId('signature-dialog').waitFor({ state: 'hidden' });
    await page.screenshot({ path: shot(`${size}-document`) });
    await page.getByTestId('finish-button').click();
    await page.locator('#signing-app[data-outcome="done"]').waitFor();
  }

  test('each gated signer confirms an emailed code, then signs; the certificate records it', async () => {
    const created = await api.createEnvelope(await contractPdf(), {
      title: 'Mutual NDA',
      recipients: [
        { ...alice, role: 'SIGNER', verificationRequired: true },
        { ...bob, role: 'SIGNER', verificationRequired: true },
      ],
      fields: [field('SIGNATURE', alice, 8, 66, 36, 8), field('SIGNATURE', bob, 53, 66, 36, 8)],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const envelopeId: string = created.body.envelopeId;
    const linkOf = (email: string): string => created.body.recipients.find((r: { email: string }) => r.email === email).signingUrl;

    const desktop = await launchChromium({ viewport: { width: 1280, height: 900 } });
    const phone = await launchChromium({ viewport: { width: 375, height: 667 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    browsers.push(desktop, phone);

    const alicePage = await desktop.context.newPage();
    const aliceProblems = await watchPage(alicePage);
    await verifyAndSign(alicePage, linkOf(alice.email), alice, '1280');

    const bobPage = await phone.context.newPage();
    const bobProblems = await watchPage(bobPage);
    await verifyAndSign(bobPage, linkOf(bob.email), bob, '375');

    // The failed code check answers 400 on purpose: the console line for it is the page's own request.
    const unexpected = (list: string[]) => list.filter((p) => !/verification\/confirm/.test(p) && !/status of 400/.test(p));
    assert.deepEqual(unexpected(aliceProblems), []);
    assert.deepEqual(unexpected(bobProblems), []);

    await waitFor('COMPLETED', async () => {
      const s = await api.json<{ status: string }>('GET', `/v1/envelopes/${envelopeId}/status`);
      return { done: s.body.status === 'COMPLETED' ? true : undefined, seen: s.body.status };
    });
    const download = await api.download(`/v1/envelopes/${envelopeId}/download`);
    assert.equal(download.status, 200);
    const signedPath = artifactPath('gated-signed.pdf');
    writeFileSync(signedPath, download.bytes);
    const pages = Number(/Pages:\s+(\d+)/.exec((await run('pdfinfo', [signedPath])).stdout)![1]);
    // The certificate runs over several pages since it prints the consent text: every page after the contract's one.
    const certificate = (await run('pdftotext', ['-f', '2', '-l', String(pages), '-layout', signedPath, '-'])).stdout;
    assert.equal(certificate.match(/Email code sent to this address, confirmed/g)?.length, 2, certificate);
    assert.equal(certificate.match(/RECIPIENT_VERIFIED/g)?.length, 2, certificate);
    const png = await run('pdftoppm', ['-png', '-r', '60', '-f', '2', '-l', String(pages), signedPath, path.join(SHOTS, 'gated-certificate')]);
    assert.equal(png.code, 0, png.stderr);
  });
});
