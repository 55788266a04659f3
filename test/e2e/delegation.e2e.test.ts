// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TestApp } from '../harness.js';
import { startSmtpServer, type TestSmtpServer } from '../fixtures/smtp.js';
import { assertPageFitsAndIsAccessible, contractPdf, launchChromium, startBrowserApp, watchPage, type Api } from './helpers.js';

const SHOTS = '/tmp/shots';
const shot = (name: string) => {
  mkdirSync(SHOTS, { recursive: true });
  return path.join(SHOTS, `delegation-${name}.png`);
};

/**
 * "I am not the right person" in a real Chromium against the real server: the recipient opens their
 * link, hands the document to a colleague from the page (name, email, reason), the colleague gets an
 * invitation by real SMTP, and the old link then says the document was handed to someone else.
 */
describe('delegation from the signing page in Chromium', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  let api: Api;
  const browsers: { close: () => Promise<void> }[] = [];

  before(async () => {
    smtp = await startSmtpServer();
    ({ t, api } = await startBrowserApp({ env: { SMTP_URL: smtp.url } }));
  });
  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
    await smtp?.close();
  });

  for (const width of [1280, 375]) {
    test(`at ${width} px: the recipient delegates; the delegate is invited; the old link says it was handed over`, async () => {
      const alice = { email: `alice-${width}@example.com`, name: 'Alice Wrongperson' };
      const grace = { email: `grace-${width}@example.org`, name: 'Grace Rightperson' };
      const created = await api.createEnvelope(await contractPdf(), {
        title: 'Services agreement',
        allowDelegation: true,
        recipients: [{ ...alice, role: 'SIGNER' }],
        fields: [{ type: 'SIGNATURE', recipientEmail: alice.email, page: 1, positionXPercent: 10, positionYPercent: 70, widthPercent: 30, heightPercent: 6 }],
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const link: string = created.body.recipients[0].signingUrl;

      const browser = await launchChromium({ viewport: { width, height: width === 375 ? 740 : 900 } });
      browsers.push(browser);
      const page = await browser.context.newPage();
      // The old link's session answers 410 after the hand-over: the page asks for it, and says so.
      const problems = await watchPage(page, '/sign/', /status of 410/);
      await page.goto(link);
      const offer = page.getByTestId('delegate-button');
      await offer.waitFor({ state: 'visible', timeout: 60_000 });
      assert.equal(await offer.textContent(), 'I am not the right person');
      await offer.click();
      const dialog = page.getByTestId('delegate-dialog');
      await dialog.waitFor({ state: 'visible' });
      // Checked on the page before anything is sent.
      await page.getByTestId('delegate-confirm').click();
      assert.equal(await page.getByTestId('delegate-error').textContent(), 'Please enter their name.');
      await page.getByTestId('delegate-name').fill(grace.name);
      await page.getByTestId('delegate-email').fill('grace-at-example');
      await page.getByTestId('delegate-confirm').click();
      assert.equal(await page.getByTestId('delegate-error').textContent(), 'Please enter a valid email address.');
      await page.getByTestId('delegate-email').fill(grace.email);
      await page.getByTestId('delegate-reason').fill('Grace signs for our team');
      await assertPageFitsAndIsAccessible(page, 'delegation dialog', width);
      await page.screenshot({ path: shot(`${width}-dialog`) });

      const since = smtp.messages.length;
      await page.getByTestId('delegate-confirm').click();
      await page.locator('#signing-app[data-outcome="delegated"]').waitFor({ timeout: 60_000 });
      const banner = await page.getByTestId('status-banner').textContent();
      assert.match(banner ?? '', new RegExp(`Handed over to ${grace.name} \\(${grace.email.replace('.', '\\.')}\\)`));
      assert.equal(await page.getByTestId('document').isVisible(), false, 'the document is no longer shown');
      await assertPageFitsAndIsAccessible(page, 'after the hand-over', width);
      await page.screenshot({ path: shot(`${width}-done`) });

      const mail = await smtp.waitFor((m) => smtp.messages.indexOf(m) >= since && JSON.stringify(m.to).includes(grace.email), 20_000);
      assert.match(mail.text ?? '', /Alice Wrongperson .* was asked to handle this document and forwarded it to you/);
      const newLink = /https?:\/\/\S+\/sign\/[A-Za-z0-9_-]{43}/.exec(mail.text ?? '')?.[0];
      assert.ok(newLink && newLink !== link, mail.text);

      await page.goto(link);
      await page.getByTestId('document-title').filter({ hasText: 'Document handed over' }).waitFor({ timeout: 60_000 });
      assert.match((await page.getByTestId('status-banner').textContent()) ?? '', /handed to someone else/);
      await assertPageFitsAndIsAccessible(page, 'the old link', width);
      await page.screenshot({ path: shot(`${width}-old-link`) });

      // The delegate's own link opens the document, for them.
      await page.goto(newLink!);
      await page.getByTestId('recipient-line').filter({ hasText: grace.email }).waitFor({ timeout: 60_000 });
      assert.deepEqual(problems, []);
    });
  }
});
