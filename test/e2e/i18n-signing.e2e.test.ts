// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { allMessages, t as message } from '../../src/i18n/catalogue.js';
import type { Locale } from '../../src/i18n/locales.js';
import type { TestApp } from '../harness.js';
import { artifactPath, assertPageFitsAndIsAccessible, contractPdf, drawOnCanvas, launchChromium, startBrowserApp, watchPage, type Api } from './helpers.js';

/**
 * Signing in the signer's language, in a real Chromium against the real server: a German recipient
 * consents, is guided, signs and finishes with every word on the page German (dates too); an Arabic one
 * gets a right-to-left page, axe-clean at 375 and 1280 px. The browser asks in English each time: the
 * recipient's locale wins.
 */
describe('signing in the signer\'s language', () => {
  let t: TestApp;
  let api: Api;
  const browsers: { close: () => Promise<void> }[] = [];
  const shot = (name: string) => (process.env.SHOTS_DIR ? `${process.env.SHOTS_DIR}/${name}.png` : artifactPath(`${name}.png`));
  const field = (type: string, email: string, x: number, y: number, w: number, h: number) => ({ type, recipientEmail: email, page: 1, positionXPercent: x, positionYPercent: y, widthPercent: w, heightPercent: h });

  before(async () => {
    ({ t, api } = await startBrowserApp());
  });
  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
  });

  /** Catalogue messages of `locale` as patterns, arguments as wildcards. */
  const patternsOf = (locale: Locale) =>
    Object.values(allMessages().get(locale)!).map((m) => `^${m.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\\{[^}]*\\\}/g, '.*')}$`);

  /** Every visible text node and every name, alt, title and placeholder on the page that is not `data`. */
  async function strayTexts(page: Page, locale: Locale, data: string[]): Promise<string[]> {
    return page.evaluate(
      ({ patterns, data }) => {
        const res = patterns.map((p) => new RegExp(p, 's'));
        const seen: string[] = [];
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const el = n.parentElement!;
          if (el.closest('script, noscript, [hidden], dialog:not([open])') || !n.textContent!.trim()) continue;
          seen.push(n.textContent!.trim());
        }
        for (const el of document.querySelectorAll('[aria-label], [alt], [title], [placeholder]')) {
          if (el.closest('[hidden], dialog:not([open])')) continue;
          for (const a of ['aria-label', 'alt', 'title', 'placeholder']) if (el.getAttribute(a)?.trim()) seen.push(el.getAttribute(a)!.trim());
        }
        return seen.filter((s) => !/^[\s\p{P}\p{S}\d]*$/u.test(s) && !data.some((d) => s === d) && !res.some((r) => r.test(s)));
      },
      // A select message's branches (a field's noun, shown alone as a placeholder) are catalogue text too.
      { patterns: patternsOf(locale), data: [...data, ...['TEXT', 'NUMBER'].map((type) => message(locale, 'signing-widgets.noun', { type }))] },
    );
  }

  test('a German recipient signs in German: every string on the page, the deadline and the outcome', async () => {
    const dora = { email: 'dora@example.com', name: 'Dora Deutsch' };
    const deadline = new Date(Math.ceil((Date.now() + 60 * 86_400_000) / 60_000) * 60_000);
    const germanDeadline = new Intl.DateTimeFormat('de', { year: 'numeric', month: 'long', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short', timeZone: 'Europe/Berlin' }).format(deadline);
    const created = await api.createEnvelope(await contractPdf(), {
      title: 'Dienstvertrag',
      recipients: [{ ...dora, role: 'SIGNER', locale: 'de' }],
      fields: [field('SIGNATURE', dora.email, 8, 66, 36, 8), field('TEXT', dora.email, 8, 33, 36, 3.5), field('DATE', dora.email, 53, 33, 30, 3.5)],
      expiresAt: deadline.toISOString(),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.recipients[0].locale, 'de');

    const desktop = await launchChromium({ viewport: { width: 1280, height: 900 }, locale: 'en-US', timezoneId: 'Europe/Berlin' });
    browsers.push(desktop);
    const page = await desktop.context.newPage();
    const problems = await watchPage(page);
    await page.goto(created.body.recipients[0].signingUrl);
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'de');
    await page.locator('#signing-app[data-step="consent"]').waitFor({ timeout: 60_000 });
    assert.equal(await page.title(), 'Dienstvertrag · Prüfen und unterschreiben');
    assert.match((await page.getByTestId('consent-text').textContent()) ?? '', /^Indem Sie fortfahren, stimmen Sie zu/);
    assert.equal(await page.getByTestId('sender-line').textContent(), 'Test Customer bittet Sie, dieses Dokument zu unterschreiben.');
    // The deadline in German words and in the recipient's time zone (the browser's: Berlin), e.g. "14. März 2031 um 16:30 MEZ".
    assert.match(germanDeadline, /^\d{1,2}\. (Januar|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember) \d{4} um \d{2}:\d{2} MES?Z$/);
    assert.equal(await page.getByTestId('deadline-line').textContent(), `Bitte antworten Sie bis ${germanDeadline}.`);
    assert.deepEqual(await strayTexts(page, 'de', [dora.name, 'Dienstvertrag', 'Test Customer', 'Signet']), []);
    await assertPageFitsAndIsAccessible(page, 'German consent step', 1280);

    // Nothing checked: the error is German.
    await page.getByTestId('consent-submit').click();
    assert.equal(await page.getByTestId('consent-error').textContent(), 'Kreuzen Sie das Kästchen an, um zuzustimmen, oder lehnen Sie das Dokument ab.');
    await page.getByTestId('consent-check').check();
    await page.getByTestId('consent-submit').click();
    await page.locator('#signing-app[data-ready="true"]').waitFor({ timeout: 60_000 });
    await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId('status-banner').textContent(), 'Vielen Dank. Prüfen Sie das Dokument und unterschreiben Sie dann.');
    assert.match((await page.getByTestId('recipient-line').textContent()) ?? '', /^Unterzeichnung als Dora Deutsch <dora@example\.com> · PDF herunterladen$/);
    assert.equal(await page.getByTestId('progress').textContent(), '0 von 2 Pflichtfeldern ausgefüllt');
    assert.equal(await page.getByTestId('next-field-button').textContent(), 'Start');

    const session = await page.evaluate(async () => (await fetch(location.pathname + '/session')).json());
    const id = (type: string) => session.fields.find((f: { type: string }) => f.type === type).fieldId as number;
    // Finishing too early: the refusals are German.
    await page.getByTestId('finish-button').click({ force: true });
    assert.equal(await page.getByTestId(`field-error-${id('SIGNATURE')}`).textContent(), 'Hier unterschreiben');
    assert.equal(await page.getByTestId(`field-error-${id('TEXT')}`).textContent(), 'Füllen Sie dieses Feld aus');
    assert.equal(await page.getByTestId('status-banner').textContent(), '2 Felder brauchen Ihre Aufmerksamkeit; sie sind rot markiert.');
    // The date the server will stamp, as it will stamp it (ISO 8601: data, the same in every language).
    assert.match((await page.getByTestId(`field-${id('DATE')}`).getAttribute('aria-label')) ?? '', /^Datum, Seite 1: \d{4}-\d{2}-\d{2}, automatisch ausgefüllt$/);
    assert.equal(await page.getByTestId(`field-${id('SIGNATURE')}`).getAttribute('aria-label'), 'Unterschreiben: Unterschrift, Seite 1, Pflichtfeld');
    assert.equal(await page.getByTestId('page-1').getAttribute('aria-label'), 'Seite 1 von 1');
    assert.deepEqual(await strayTexts(page, 'de', [dora.name, 'Dienstvertrag', 'Test Customer', 'Signet', `${dora.name} <${dora.email}>`]), []);

    // The signature dialog in German, then the signature and the text.
    await page.getByTestId(`field-${id('SIGNATURE')}`).click();
    await page.getByTestId('signature-dialog').waitFor({ state: 'visible' });
    assert.equal(await page.locator('#signature-dialog-title').textContent(), 'Ihre Unterschrift festlegen');
    await page.getByTestId('signature-apply').click();
    assert.equal(await page.getByTestId('signature-error').textContent(), 'Zeichnen Sie zuerst Ihre Unterschrift in das Feld oder wählen Sie „Tippen“, um sie einzutippen.');
    assert.deepEqual(await strayTexts(page, 'de', [dora.name, 'Dienstvertrag', 'Test Customer', 'Signet', `${dora.name} <${dora.email}>`]), []);
    await drawOnCanvas(page, '[data-testid="signature-draw-canvas"]');
    await page.getByTestId('signature-apply').click();
    await page.getByTestId('signature-dialog').waitFor({ state: 'hidden' });
    await page.getByTestId(`field-${id('TEXT')}`).fill('Muster GmbH');
    assert.equal(await page.getByTestId('progress').textContent(), '2 von 2 Pflichtfeldern ausgefüllt');
    await page.screenshot({ path: shot('i18n-de-1280'), fullPage: true });

    await page.getByTestId('finish-button').click();
    await page.locator('#signing-app[data-outcome="done"]').waitFor();
    assert.match((await page.getByTestId('done-text').textContent()) ?? '', /^Sie haben „Dienstvertrag“ unterschrieben\. Alle erhalten das fertige Dokument per E-Mail\.$/);
    await page.getByTestId('download-copy-link').waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId('download-copy-link').textContent(), 'Ihre Kopie herunterladen');
    assert.equal(await page.getByTestId('download-copy-link').getAttribute('download'), 'Dienstvertrag - unterschrieben.pdf');
    assert.deepEqual(problems, []);
  });

  test('an Arabic recipient gets a right-to-left page, axe-clean at 375 and 1280 px', async () => {
    const amal = { email: 'amal@example.com', name: 'أمل' };
    const created = await api.createEnvelope(await contractPdf(), {
      title: 'عقد خدمات',
      recipients: [{ ...amal, role: 'SIGNER', locale: 'ar' }],
      fields: [field('SIGNATURE', amal.email, 8, 66, 36, 8), field('TEXT', amal.email, 8, 33, 36, 3.5)],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const link = created.body.recipients[0].signingUrl;

    const phone = await launchChromium({ viewport: { width: 375, height: 667 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, locale: 'en-US' });
    const desktop = await launchChromium({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
    browsers.push(phone, desktop);
    const page = await phone.context.newPage();
    const problems = await watchPage(page);
    await page.goto(link);
    await page.locator('#signing-app[data-step="consent"]').waitFor({ timeout: 60_000 });
    assert.deepEqual(await page.evaluate(() => [document.documentElement.lang, document.documentElement.dir, getComputedStyle(document.body).direction]), ['ar', 'rtl', 'rtl']);
    assert.match((await page.getByTestId('consent-text').textContent()) ?? '', /^بالمتابعة، فإنك توافق/);
    assert.deepEqual(await strayTexts(page, 'ar', [amal.name, 'عقد خدمات', 'Test Customer', 'Signet']), []);
    await assertPageFitsAndIsAccessible(page, 'Arabic consent step', 375);
    await page.screenshot({ path: shot('i18n-ar-consent-375'), fullPage: true });
    await page.getByTestId('consent-check').check();
    await page.getByTestId('consent-submit').click();
    await page.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
    assert.equal(await page.getByTestId('next-field-button').textContent(), 'ابدأ');
    // The action bar mirrors: Finish (the last button) is at the left edge of the bar, Start at the right.
    const finish = (await page.getByTestId('finish-button').boundingBox())!;
    const start = (await page.getByTestId('next-field-button').boundingBox())!;
    assert.ok(finish.x < start.x, `Finish at ${finish.x}, Start at ${start.x}`);
    // The PDF keeps its own layout: a field placed 8% from the page's left edge stays there.
    const pageBox = (await page.getByTestId('page-1').boundingBox())!;
    const session = await page.evaluate(async () => (await fetch(location.pathname + '/session')).json());
    const sigBox = (await page.getByTestId(`field-box-${session.fields.find((f: { type: string }) => f.type === 'SIGNATURE').fieldId}`).boundingBox())!;
    assert.ok(Math.abs(((sigBox.x - pageBox.x) / pageBox.width) * 100 - 8) < 1, `signature box at ${(((sigBox.x - pageBox.x) / pageBox.width) * 100).toFixed(1)}%`);
    assert.deepEqual(await strayTexts(page, 'ar', [amal.name, 'عقد خدمات', 'Test Customer', 'Signet', `${amal.name} <${amal.email}>`]), []);
    await assertPageFitsAndIsAccessible(page, 'Arabic document', 375);
    await page.screenshot({ path: shot('i18n-ar-375') });

    const wide = await desktop.context.newPage();
    const wideProblems = await watchPage(wide);
    await wide.goto(link);
    await wide.locator('[data-testid="page-1"][data-rendered="true"]').waitFor({ timeout: 60_000 });
    assert.equal(await wide.evaluate(() => document.documentElement.dir), 'rtl');
    await assertPageFitsAndIsAccessible(wide, 'Arabic document', 1280);
    await wide.screenshot({ path: shot('i18n-ar-1280'), fullPage: true });
    assert.deepEqual([...problems, ...wideProblems], []);
  });

  test('with no locale anywhere, the browser\'s language is used; English stays the default', async () => {
    const eve = { email: 'eve@example.com', name: 'Eve Evans' };
    const created = await api.createEnvelope(await contractPdf(), { title: 'Contrat', recipients: [{ ...eve, role: 'SIGNER' }], fields: [field('SIGNATURE', eve.email, 8, 66, 36, 8)] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const french = await launchChromium({ locale: 'fr-FR' });
    browsers.push(french);
    const page = await french.context.newPage();
    await page.goto(created.body.recipients[0].signingUrl);
    await page.locator('#signing-app[data-step="consent"]').waitFor({ timeout: 60_000 });
    assert.equal(await page.evaluate(() => document.documentElement.lang), 'fr');
    assert.equal(await page.getByTestId('sender-line').textContent(), 'Test Customer vous demande de signer ce document.');
    assert.match((await page.getByTestId('consent-text').textContent()) ?? '', /^En continuant, vous acceptez/);
  });
});
