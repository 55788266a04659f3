// test-lane: once (which language the verification pages speak; their lookups run on both stores in document-verify)
/**
 * The public verification pages in the visitor's language (issue 37, item 6): /verify/<token> and
 * /verify-document in German and Arabic by Accept-Language and ?lang=, right to left for Arabic, the
 * shared message modules served beside each page, no English catalogue text on a German page, and no
 * user-facing string literal left in the pages' scripts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { IntlMessageFormat } from 'intl-messageformat';
import { allMessages } from '../src/i18n/catalogue.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { uniq } from './fixtures/envelopes.js';

let t: TestApp;
before(async () => (t = await createTestApp()));
after(() => t?.close());

async function verifyToken(): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/verifications',
    headers: { ...bearer(t.customer.apiKey), 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
    payload: JSON.stringify({ type: 'email', email: uniq('page'), name: 'Jan Kowalski' }),
  });
  assert.equal(res.statusCode, 201, res.body);
  return new URL(res.json().verificationUrl).pathname.split('/').pop()!;
}

type Node = { type: number; value?: string; options?: Record<string, { value: Node[] }> };
const literals = (nodes: Node[], out: string[] = []): string[] => {
  for (const n of nodes) {
    if (n.type === 0 && n.value) out.push(n.value.trim());
    for (const o of Object.values(n.options ?? {})) literals(o.value, out);
  }
  return out;
};
/** The English words of a namespace that a German page must not show (the ones German spells differently). */
function english(prefix: string): string[] {
  const de = Object.values(allMessages().get('de')!).join('\n');
  return Object.entries(allMessages().get('en')!)
    .filter(([k]) => k.startsWith(prefix))
    .flatMap(([, m]) => literals(new IntlMessageFormat(m, 'en').getAst() as unknown as Node[]))
    .filter((s) => s.length >= 6 && !de.includes(s));
}
/** The page as a person reads it: its markup and embedded messages taken out. */
const visible = (html: string) => html.replace(/<script[\s\S]*?<\/script>/g, '').replace(/<[^>]+>/g, ' ');

describe('verification pages in the visitor’s language', () => {
  test('/verify-document: Accept-Language picks German, ?lang= overrides, Arabic is right to left, English by default', async () => {
    const de = await t.app.inject({ url: '/verify-document', headers: { 'accept-language': 'de-AT,de;q=0.9,en;q=0.5' } });
    assert.equal(de.statusCode, 200);
    assert.match(de.body, /^<!doctype html>\n<html lang="de">/);
    assert.match(de.headers.vary as string, /accept-language/i);
    assert.ok(de.body.includes('<h1>Ein unterschriebenes Dokument prüfen</h1>'));
    assert.deepEqual(english('verify-document.').filter((s) => visible(de.body).includes(s)), []);
    // Its script's messages: this namespace only, in German.
    const block = JSON.parse(/<script type="application\/json" id="signet-messages">(.*?)<\/script>/.exec(de.body)![1]) as Record<string, string>;
    assert.ok(Object.keys(block).every((k) => k.startsWith('verify-document.')));
    assert.equal(block['verify-document.empty'], 'Diese Datei ist leer.');

    const ar = await t.app.inject({ url: '/verify-document?lang=ar', headers: { 'accept-language': 'de' } });
    assert.match(ar.body, /^<!doctype html>\n<html lang="ar" dir="rtl">/);
    assert.ok(ar.body.includes('تحقق من مستند موقّع'));
    const en = await t.app.inject({ url: '/verify-document?lang=xx', headers: { 'accept-language': 'ja' } });
    assert.match(en.body, /^<!doctype html>\n<html lang="en">/);
    assert.ok(en.body.includes('<h1>Verify a signed document</h1>'));
    // The language switch links every language, each named in its own.
    for (const name of ['Deutsch', 'français', 'العربية', '中文']) assert.ok(de.body.includes(name), name);
  });

  test('/verify/<token>: German and Arabic; an unknown link answers in the visitor’s language too', async () => {
    const token = await verifyToken();
    const de = await t.app.inject({ url: `/verify/${token}`, headers: { 'accept-language': 'de' } });
    assert.equal(de.statusCode, 200);
    assert.match(de.body, /<html lang="de">/);
    assert.ok(de.body.includes('Hallo Jan Kowalski,') && de.body.includes('Code per E-Mail senden'));
    assert.match(de.body, /Wir senden einen 6-stelligen Code an <strong class="address" data-testid="sent-to">[^<]+<\/strong>\./);
    assert.deepEqual(english('verify.').filter((s) => visible(de.body).includes(s)), []);
    const ar = await t.app.inject({ url: `/verify/${token}?lang=ar` });
    assert.match(ar.body, /<html lang="ar" dir="rtl">/);
    assert.ok(ar.body.includes('تحقق من عنوان بريدك الإلكتروني'));
    const invalid = await t.app.inject({ url: '/verify/not-a-live-token-0000000000', headers: { 'accept-language': 'pl' } });
    assert.equal(invalid.statusCode, 404);
    assert.ok(invalid.body.includes('Ten link weryfikacyjny jest nieprawidłowy'));
    // A hostile ?lang= is no language of ours: ignored, never echoed.
    const hostile = await t.app.inject({ url: `/verify/${token}?lang=%22%3E%3Cscript%3E` });
    assert.match(hostile.body, /<html lang="en">/);
    assert.ok(!hostile.body.includes('"><script>'));
  });

  test('both pages serve the signing page’s message modules beside their own files', async () => {
    for (const page of ['/verify-document', `/verify/${await verifyToken()}`]) {
      const html = (await t.app.inject({ url: page })).body;
      const script = /<script type="module" src="([^"]+)"/.exec(html)![1];
      const dir = new URL(script, `http://x${page}`).pathname.replace(/[^/]+$/, '');
      for (const file of ['i18n.js', 'intl-messageformat.js']) {
        const res = await t.app.inject({ url: `${dir}${file}` });
        assert.equal(res.statusCode, 200, `${dir}${file}`);
        assert.match(res.headers['content-type'] as string, /javascript/);
      }
    }
  });

  test('no user-facing string literal in the pages’ scripts: every message comes from the catalogue', () => {
    for (const file of ['src/web/verify/assets/verify.js', 'src/web/verify-document/assets/verify-document.js']) {
      const code = readFileSync(file, 'utf8').replace(/^\s*\/\/.*$/gm, '');
      // A quoted run of words (two or more, starting with a letter) anywhere outside t('…') keys and selectors.
      const prose = [...code.matchAll(/(['"`])([A-Za-z][^'"`\n]*\s[^'"`\n]*)\1/g)].map((m) => m[2]).filter((s) => !/^[\w.-]+$/.test(s) && !/^\[data-|^#|^\.|^application\/|^[a-z-]+ [a-z-]+$/.test(s));
      assert.deepEqual(prose, [], file);
      assert.doesNotMatch(code, /textContent = ['"`][A-Za-z]/, file);
    }
  });
});
