// test-lane: once (which language a page speaks; the signing routes' SQL runs on both stores in signing-flow)
/**
 * The signing page speaks the recipient's language: the route picks it (the recipient's locale, else
 * the account's default, else Accept-Language, else English; a bad link's page too), the shell is
 * rendered from the catalogues (every text node and every aria-label/alt/title/placeholder is catalogue
 * text), and no page script assigns a user-facing string literal that bypasses them.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { allMessages } from '../src/i18n/catalogue.js';
import { LOCALES } from '../src/i18n/locales.js';
import { renderInvalidLinkPage, renderSigningPage } from '../src/web/signing/page.js';
import { bearer, createTestApp, testEngine, type TestApp } from './harness.js';
import { createEnvelope, person, recipientToken } from './fixtures/envelopes.js';

const ASSETS = path.join(import.meta.dirname, '../src/web/signing/assets');
/** Words that are data, not language: the product's name. */
const NOT_LANGUAGE = new Set(['Signet']);

const decode = (s: string) => s.replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** The text a person meets in an HTML shell: text nodes (scripts and JSON blocks left out) and the labelling attributes. */
function visibleTexts(html: string): string[] {
  const body = html.replace(/<script\b[^>]*>[\s\S]*?<\/script>/g, '').replace(/<style\b[^>]*>[\s\S]*?<\/style>/g, '').replace(/<!--[\s\S]*?-->/g, '')
    // An element the script fills inside a sentence (the masked address) stands for the message's argument.
    .replace(/<strong\b[^>]*><\/strong>/g, 'X');
  const texts = [...body.matchAll(/>([^<]+)</g)].map((m) => decode(m[1]).trim()).filter(Boolean);
  const attrs = [...body.matchAll(/\s(?:aria-label|alt|title|placeholder)="([^"]*)"/g)].map((m) => decode(m[1]).trim()).filter(Boolean);
  return [...texts, ...attrs];
}

/** A catalogue message with its arguments as wildcards: "Signing as {person}" → /^Signing as .+$/. */
function patternsOf(locale: (typeof LOCALES)[number]): RegExp[] {
  return Object.values(allMessages().get(locale)!).map(
    (m) => new RegExp(`^${m.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\\{[^}]*\\\}/g, '.*')}$`, 's'),
  );
}

describe('the signing shell from the catalogues', () => {
  for (const locale of LOCALES) {
    test(`${locale}: every text and label of the page is ${locale} catalogue text`, () => {
      const html = renderSigningPage({ token: 'x'.repeat(32), appPrefix: 'app-1', pdfjsPrefix: 'pdfjs-1', locale });
      assert.match(html, new RegExp(`<html lang="${locale}"${locale === 'ar' ? ' dir="rtl"' : ''}>`));
      const messages = new Set(Object.values(allMessages().get(locale)!));
      const patterns = patternsOf(locale);
      const strays = visibleTexts(html).filter((text) => !NOT_LANGUAGE.has(text) && !messages.has(text) && !patterns.some((p) => p.test(text)));
      assert.deepEqual(strays, [], `${locale}: text outside the catalogue`);
    });
  }

  test('German is German: the shell carries no English sentence of the catalogue', () => {
    const html = renderSigningPage({ token: 'x'.repeat(32), appPrefix: 'app-1', pdfjsPrefix: 'pdfjs-1', locale: 'de' });
    const english = Object.entries(allMessages().get('en')!);
    const german = allMessages().get('de')!;
    const same = new Set(english.filter(([k, v]) => german[k] === v).map(([, v]) => v));
    const texts = visibleTexts(html).filter((t) => !NOT_LANGUAGE.has(t) && !same.has(t));
    const leaked = texts.filter((t) => english.some(([, v]) => v === t));
    assert.deepEqual(leaked, []);
    assert.match(html, /Prüfen und unterschreiben/);
    assert.match(html, /"signing-consent.defaultConsent1":"Indem Sie fortfahren/);
  });

  test("each control's accessible name starts from its visible words, in every language (WCAG 2.5.3)", () => {
    const pairs = [['declineToSign', 'declineLabel'], ['consentSubmit', 'consentSubmitLabel'], ['verifySend', 'verifySendLabel'], ['verifyConfirm', 'verifyConfirmLabel'], ['zoomReset', 'zoomResetLabel'], ['start', 'startLabel'], ['decline', 'declineLabel'], ['finish', 'finishLabel'], ['approve', 'approveLabel'], ['next', 'nextLabel'], ['sigDraw', 'sigDrawLabel'], ['sigType', 'sigTypeLabel'], ['sigUpload', 'sigUploadLabel'], ['sigClear', 'sigClearLabel'], ['cancel', 'cancelLabel'], ['sigApply', 'sigApplyLabel'], ['decline', 'declineToSign'], ['downloadPdf', 'downloadPdfLabel']];
    const bad = LOCALES.flatMap((l) => {
      const m = allMessages().get(l)!;
      return pairs.filter(([shown, name]) => !m[`signing.${name}`].toLocaleLowerCase(l).includes(m[`signing.${shown}`].toLocaleLowerCase(l))).map(([shown, name]) => `${l}: "${m[`signing.${shown}`]}" not in "${m[`signing.${name}`]}"`);
    });
    assert.deepEqual(bad, []);
  });

  test('the invalid-link page in the negotiated language, right to left for Arabic', () => {
    assert.match(renderInvalidLinkPage('ar'), /<html lang="ar" dir="rtl">/);
    assert.match(renderInvalidLinkPage('ar'), /رابط التوقيع هذا غير صالح/);
    assert.match(renderInvalidLinkPage('pl'), /<title>Nieprawidłowy link<\/title>/);
    assert.match(renderInvalidLinkPage(), /<html lang="en">/);
  });
});

describe('no user-facing literal in the page scripts', () => {
  const files = readdirSync(ASSETS).filter((f) => f.endsWith('.js') && !f.startsWith('intl-messageformat'));
  // Comments say things in English on purpose; only code counts.
  const code = (f: string) =>
    readFileSync(path.join(ASSETS, f), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
  const LITERAL = String.raw`(?:'[^']*[A-Za-z][^']*'|"[^"]*[A-Za-z][^"]*"|\`[^\`]*[A-Za-z][^\`]*\`)`;
  const rules: [string, RegExp][] = [
    ['text or label property set to a literal', new RegExp(String.raw`\.(?:textContent|innerText|innerHTML|alt|placeholder|title)\s*=\s*${LITERAL}`)],
    ['a labelling attribute set to a literal', new RegExp(String.raw`setAttribute\(\s*'(?:aria-label|aria-description|alt|title|placeholder)'\s*,\s*${LITERAL}`)],
    ['an error message literal (shown to the signer)', new RegExp(String.raw`new Error\(\s*'[^']*[a-z] [a-z]`)],
    ['an option label literal', new RegExp(String.raw`new Option\(\s*${LITERAL}`)],
    ['a message helper given a literal', new RegExp(String.raw`\b(?:say|fail|showError|line|createTextNode)\([^)]*?'[A-Z][a-z]+ [a-z]`)],
    ['an English sentence in a literal', /['"`][A-Z][a-z]+(?: [a-z]+){3,}/],
  ];

  for (const f of ['signing.js', 'consent.js', 'done.js', 'fields.js', 'signature-dialog.js', 'verification.js', 'zoom.js', 'pdf-view.js']) {
    test(`${f} passes every string through t()`, () => {
      assert.ok(files.includes(f), `${f} exists`);
      const text = code(f);
      const found = rules.flatMap(([what, rule]) => text.split('\n').filter((l) => rule.test(l)).map((l) => `${what}: ${l.trim()}`));
      assert.deepEqual(found, []);
    });
  }

  test('every key the scripts ask for exists in the English catalogue', () => {
    const english = allMessages().get('en')!;
    const asked = files.flatMap((f) => [...code(f).matchAll(/\bt\(\s*'([a-z-]+\.[A-Za-z_]+)'/g)].map((m) => m[1]));
    assert.ok(asked.length > 80, `${asked.length} keys`);
    assert.deepEqual(asked.filter((k) => !(k in english)), []);
  });
});

describe('the page route picks the language', { skip: testEngine !== 'local' && 'Signet serves no signing page for the documenso engine' }, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => {
    await t?.close();
  });
  const page = (token: string, acceptLanguage?: string) => t.app.inject({ url: `/sign/${token}`, headers: acceptLanguage ? { 'accept-language': acceptLanguage } : {} });
  const lang = (html: string) => /<html lang="([^"]+)"/.exec(html)?.[1];

  test("the recipient's locale wins, then the account's default, then Accept-Language, then English; Vary names it", async () => {
    const de = person('de', 'SIGNER', { locale: 'de' } as never);
    const plain = person('plain');
    const env = await createEnvelope(t, { recipients: [de, plain] });
    const deRes = await page(recipientToken(env, de.email), 'fr');
    assert.equal(deRes.statusCode, 200);
    assert.equal(lang(deRes.body), 'de');
    assert.match(String(deRes.headers.vary), /accept-language/i);
    assert.match(deRes.body, /<title>Prüfen und unterschreiben<\/title>/);
    assert.equal(lang((await page(recipientToken(env, plain.email), 'fr-CA,fr;q=0.9')).body), 'fr');
    assert.equal(lang((await page(recipientToken(env, plain.email))).body), 'en');

    // The account's default comes before the browser's.
    const patched = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' }, payload: { defaultLocale: 'ar' } });
    assert.equal(patched.statusCode, 200, patched.body);
    const ar = await page(recipientToken(env, plain.email), 'fr');
    assert.match(ar.body, /<html lang="ar" dir="rtl">/);
    assert.equal(lang((await page(recipientToken(env, de.email), 'fr')).body), 'de');
    await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' }, payload: { defaultLocale: null } });
  });

  test('a malformed or unknown link: the invalid-link page (404) or the shell, in the browser\'s language', async () => {
    const bad = await page('not!a*token', 'pl-PL,pl;q=0.9');
    assert.equal(bad.statusCode, 404);
    assert.equal(lang(bad.body), 'pl');
    assert.match(bad.body, /Ten link do podpisu jest nieprawidłowy/);
    const unknown = await page('A'.repeat(43), 'zh-Hans-CN');
    assert.equal(unknown.statusCode, 200);
    assert.equal(lang(unknown.body), 'zh-CN');
  });

  test("the session words the built-in consent text in the page's language; the account's own text stays as written", async () => {
    const plain = person('consent');
    const env = await createEnvelope(t, { recipients: [plain] });
    const session = await t.app.inject({ url: `/sign/${recipientToken(env, plain.email)}/session`, headers: { 'accept-language': 'es' } });
    assert.match(session.json().consent.text, /^Al continuar, acepta recibir/);
    const de = person('consent-de', 'SIGNER', { locale: 'de' } as never);
    const env2 = await createEnvelope(t, { recipients: [de] });
    const german = await t.app.inject({ url: `/sign/${recipientToken(env2, de.email)}/session`, headers: { 'accept-language': 'es' } });
    assert.match(german.json().consent.text, /^Indem Sie fortfahren/);

    const own = await t.createCustomer();
    await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(own.apiKey), 'content-type': 'application/json' }, payload: { consentText: 'We sign electronically.' } });
    const env3 = await createEnvelope(t, { recipients: [{ ...person('own'), locale: 'de' } as never] }, { apiKey: own.testApiKey });
    const ownSession = await t.app.inject({ url: `/sign/${recipientToken(env3, env3.recipients[0].email)}/session` });
    assert.equal(ownSession.json().consent.text, 'We sign electronically.');
  });
});
