// test-lane: once (reads the message catalogues; opens no database)
/**
 * The catalogues are complete and well formed: every message in every locale, each one valid ICU with
 * the same arguments as the English one, and locale negotiation as the pages use it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IntlMessageFormat } from 'intl-messageformat';
import { allMessages, messagesFor, messagesJson, t } from '../src/i18n/catalogue.js';
import { LOCALES, negotiateLocale, resolveLocale } from '../src/i18n/locales.js';

type Node = { type: number; value?: string; options?: Record<string, { value: Node[] }>; children?: Node[] };
/** The argument names a message uses (ICU's #, tags and nested plural/select branches included). */
function argumentsOf(nodes: Node[], out = new Set<string>()): Set<string> {
  for (const n of nodes) {
    // 0 literal, 7 pound: no argument of their own.
    if (n.type !== 0 && n.type !== 7 && n.value) out.add(n.value);
    for (const option of Object.values(n.options ?? {})) argumentsOf(option.value, out);
    if (n.children) argumentsOf(n.children, out);
  }
  return out;
}

describe('message catalogues', () => {
  const all = allMessages();
  const english = all.get('en')!;

  test('every English message exists in every locale, and no locale has a message English lacks', () => {
    assert.ok(Object.keys(english).length > 0);
    for (const locale of LOCALES) {
      const messages = all.get(locale)!;
      const missing = Object.keys(english).filter((k) => !(k in messages));
      const extra = Object.keys(messages).filter((k) => !(k in english));
      assert.deepEqual(missing, [], `${locale} lacks messages`);
      assert.deepEqual(extra, [], `${locale} has messages English lacks`);
    }
  });

  test('every message is valid ICU with the arguments of its English one, and is not left untranslated blank', () => {
    for (const locale of LOCALES) {
      for (const [key, text] of Object.entries(all.get(locale)!)) {
        assert.ok(text.trim().length > 0, `${locale} ${key} is blank`);
        let ast: Node[];
        try {
          ast = new IntlMessageFormat(text, locale).getAst() as unknown as Node[];
        } catch (error) {
          assert.fail(`${locale} ${key}: ${(error as Error).message}`);
        }
        const expected = [...argumentsOf(new IntlMessageFormat(english[key], 'en').getAst() as unknown as Node[])].sort();
        assert.deepEqual([...argumentsOf(ast)].sort(), expected, `${locale} ${key} arguments`);
      }
    }
  });

  test('plurals follow each language: Polish few/many, Arabic two', () => {
    assert.equal(t('en', 'signing.progress', { done: 1, total: 1 }), '1 of 1 required field done');
    assert.equal(t('en', 'signing.progress', { done: 0, total: 2 }), '0 of 2 required fields done');
    assert.match(t('pl', 'signing.progress', { done: 1, total: 3 }), /3 wymaganych pól/);
    assert.match(t('ar', 'signing.progress', { done: 1, total: 2 }), /حقلين/);
  });

  test('a page gets its namespaces only, English filling a gap, as JSON that cannot close its element', () => {
    const messages = messagesFor('de', ['signing']);
    assert.ok(Object.keys(messages).every((k) => k.startsWith('signing')));
    assert.equal(messages['signing.noFields'], 'Keine Felder auszufüllen');
    assert.equal(messagesJson({ a: '</script><b>' }), '{"a":"\\u003c/script>\\u003cb>"}');
  });

  test('locale negotiation: q-values, regions, Chinese scripts; the recipient, then the account, then the browser', () => {
    assert.equal(negotiateLocale('fr-CA,fr;q=0.9,en;q=0.8'), 'fr');
    assert.equal(negotiateLocale('ja,de;q=0.5,en;q=0.4'), 'de');
    assert.equal(negotiateLocale('en;q=0.1, pl;q=0.9'), 'pl');
    assert.equal(negotiateLocale('zh-Hans-CN'), 'zh-CN');
    assert.equal(negotiateLocale('zh-TW'), undefined);
    assert.equal(negotiateLocale('pt-BR'), 'pt');
    assert.equal(negotiateLocale('*'), undefined);
    assert.equal(negotiateLocale(undefined), undefined);
    assert.equal(resolveLocale(null, 'de', 'fr'), 'de');
    assert.equal(resolveLocale('ar', 'de'), 'ar');
    assert.equal(resolveLocale('xx', undefined), 'en');
  });
});
