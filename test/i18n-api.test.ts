/**
 * The recipient's language through the API: `locale` on a recipient (create, draft, from-template) and on
 * a template slot, stored on both the envelope's and the engine's recipient, shown in RecipientStatus and
 * TemplateRecipient; an unsupported one is a VALIDATION_ERROR naming the supported locales; the account's
 * defaultLocale through PATCH/GET /v1/account and the dashboard's settings form.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { engineRecipients, envelopeRecipients } from '../src/db/schema/index.js';
import { bearer, createTestApp, testEngine, type TestApp } from './harness.js';
import { form, signInDashboard } from './fixtures/dashboard.js';
import { assertError, createEnvelope, envelopeBody, getEnvelope, makePdf, multipart, newKey, person, postMultipart, sigField } from './fixtures/envelopes.js';

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t?.close();
});

const SUPPORTED = 'en, de, fr, es, pt, pl, zh-CN, ar';
const local = testEngine === 'local';

async function storedLocales(envelopeId: string): Promise<{ envelope: (string | null)[]; engine: (string | null)[] }> {
  const rows = await t.container.db.select().from(envelopeRecipients).where(eq(envelopeRecipients.envelopeId, envelopeId)).orderBy(envelopeRecipients.position);
  const engine = [];
  for (const r of rows) {
    const [e] = await t.container.db.select({ locale: engineRecipients.locale }).from(engineRecipients).where(eq(engineRecipients.id, Number(r.engineRecipientId)));
    engine.push(e?.locale ?? null);
  }
  return { envelope: rows.map((r) => r.locale), engine };
}

describe('recipient locale', { skip: !local && 'the documenso engine refuses a locale (its own test below)' }, () => {
  test('create: stored on the envelope and the engine recipient, shown in RecipientStatus (null when not given)', async () => {
    const de = person('de', 'SIGNER', { locale: 'de' } as never);
    const plain = person('plain');
    const env = await createEnvelope(t, { recipients: [de, plain] });
    assert.deepEqual(env.recipients.map((r) => r.locale), ['de', null]);
    assert.deepEqual((await getEnvelope(t, env.envelopeId)).recipients.map((r) => r.locale), ['de', null]);
    assert.deepEqual(await storedLocales(env.envelopeId), { envelope: ['de', null], engine: ['de', null] });
  });

  test('draft: the same, and the send keeps it', async () => {
    const ar = person('ar', 'SIGNER', { locale: 'ar' } as never);
    const env = await createEnvelope(t, { recipients: [ar] }, { url: '/v1/envelopes/draft' });
    assert.equal(env.status, 'DRAFT');
    assert.equal(env.recipients[0].locale, 'ar');
    const sent = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${env.envelopeId}/send`, headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' }, payload: {} });
    assert.equal(sent.statusCode, 200, sent.body);
    assert.equal((await getEnvelope(t, env.envelopeId)).recipients[0].locale, 'ar');
    assert.deepEqual(await storedLocales(env.envelopeId), { envelope: ['ar'], engine: ['ar'] });
  });

  test('an unsupported locale, a wrong type or a region we do not have: 400 VALIDATION_ERROR listing the supported ones; nothing made', async () => {
    for (const locale of ['xx', 'de-AT', 'zh-TW', 42, '', 'EN']) {
      const res = await postMultipart(t, envelopeBody([await makePdf()], { recipients: [{ ...person('bad'), locale }], fields: [sigField('x@example.com')] }));
      const body = assertError(res, 400, 'VALIDATION_ERROR');
      assert.match(JSON.stringify(body), /recipients\.0\.locale/, `${locale}`);
      assert.ok(JSON.stringify(body).includes(SUPPORTED), `${locale}: ${res.body}`);
    }
  });

  test("template slots carry a locale; from-template takes the person's, else the slot's", async () => {
    const pdf = await makePdf([[{ text: '{{signature, r1}}', x: 72, y: 600 }, { text: '{{signature, r2}}', x: 72, y: 400 }, { text: '{{signature, r3}}', x: 72, y: 300 }]]);
    const slots = [
      { email: 'slot1@example.com', name: 'Slot 1', role: 'SIGNER', locale: 'fr' },
      { email: 'slot2@example.com', name: 'Slot 2', role: 'SIGNER', locale: 'pl' },
      { email: 'slot3@example.com', name: 'Slot 3', role: 'SIGNER' },
    ];
    const tpl = multipart([{ name: 'file', value: pdf, filename: 't.pdf' }, { name: 'payload', value: JSON.stringify({ title: 'T', recipients: slots }) }]);
    const made = await t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(t.customer.apiKey), 'content-type': tpl.contentType }, payload: tpl.body });
    assert.equal(made.statusCode, 201, made.body);
    const { templateId, recipients } = made.json() as { templateId: string; recipients: { locale: string | null }[] };
    assert.deepEqual(recipients.map((s) => s.locale), ['fr', 'pl', null]);
    const got = await t.app.inject({ url: `/v1/templates/${templateId}`, headers: bearer(t.customer.apiKey) });
    assert.deepEqual(got.json().recipients.map((s: { locale: string | null }) => s.locale), ['fr', 'pl', null]);

    const fromTemplate = (people: unknown[]) =>
      t.app.inject({ method: 'POST', url: `/v1/templates/${templateId}/from-template`, headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' }, payload: { sendImmediately: false, recipients: people } });
    const res = await fromTemplate([
      { id: 1, email: 'a@example.com', name: 'A' },
      { id: 2, email: 'b@example.com', name: 'B', locale: 'zh-CN' },
      { id: 3, email: 'c@example.com', name: 'C', locale: 'es' },
    ]);
    assert.equal(res.statusCode, 201, res.body);
    assert.deepEqual(res.json().recipients.map((r: { locale: string | null }) => r.locale), ['fr', 'zh-CN', 'es']);
    assert.deepEqual(await storedLocales(res.json().envelopeId), { envelope: ['fr', 'zh-CN', 'es'], engine: ['fr', 'zh-CN', 'es'] });

    const bad = await fromTemplate([{ id: 1, email: 'a@example.com', name: 'A', locale: 'klingon' }, { id: 2, email: 'b@example.com', name: 'B' }, { id: 3, email: 'c@example.com', name: 'C' }]);
    assert.ok(assertError(bad, 400, 'VALIDATION_ERROR') && bad.body.includes(SUPPORTED), bad.body);
    const badSlot = multipart([{ name: 'file', value: pdf, filename: 't.pdf' }, { name: 'payload', value: JSON.stringify({ title: 'T', recipients: [{ ...slots[0], locale: 'jp' }] }) }]);
    const refused = await t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(t.customer.apiKey), 'content-type': badSlot.contentType }, payload: badSlot.body });
    assert.ok(assertError(refused, 400, 'VALIDATION_ERROR') && refused.body.includes(SUPPORTED), refused.body);
  });
});

describe('recipient locale on the documenso engine', { skip: local && 'the local engine stores it (above)' }, () => {
  test('refused, naming the recipient, before Documenso is called', async () => {
    const res = await postMultipart(t, envelopeBody([await makePdf()], { recipients: [{ ...person('de'), locale: 'de' }], fields: [sigField('x@example.com')] }));
    const body = assertError(res, 400, 'VALIDATION_ERROR');
    assert.match(body.error, /recipients\.0\.locale: not available with the documenso signing engine/);
  });
});

describe("the account's defaultLocale", () => {
  const patch = (payload: unknown, key = t.customer.apiKey) =>
    t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(key), 'content-type': 'application/json' }, payload: JSON.stringify(payload) });

  test('null by default; set, shown by GET, reset by null', async () => {
    const c = await t.createCustomer();
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().defaultLocale, null);
    const set = await patch({ defaultLocale: 'pt' }, c.apiKey);
    assert.equal(set.statusCode, 200, set.body);
    assert.equal(set.json().defaultLocale, 'pt');
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().defaultLocale, 'pt');
    // Another account is untouched.
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) })).json().defaultLocale, null);
    const reset = await patch({ defaultLocale: null }, c.apiKey);
    assert.equal(reset.json().defaultLocale, null);
  });

  test('an unsupported one: 400 VALIDATION_ERROR listing the supported locales', async () => {
    for (const value of ['xx', 'de_DE', 7, true]) {
      const res = await patch({ defaultLocale: value });
      const body = assertError(res, 400, 'VALIDATION_ERROR');
      assert.ok(JSON.stringify(body).includes('defaultLocale'), res.body);
      if (typeof value === 'string') assert.ok(res.body.includes(SUPPORTED), res.body);
    }
  });

  test('the dashboard settings page offers a select of the eight languages and saves the choice', async () => {
    const c = await t.createCustomer();
    const b = await signInDashboard(t, c.id);
    const page = await t.app.inject({ url: '/dashboard/settings', headers: { cookie: b.cookie } });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<select id="defaultLocale" name="defaultLocale"/);
    for (const l of ['de', 'fr', 'es', 'pt', 'pl', 'zh-CN', 'ar']) assert.match(page.body, new RegExp(`<option value="${l}" lang="${l}"`));
    const current = { displayName: 'Acme', notificationEmail: '', consentText: '', allowedOrigins: '', brandColor: '', senderNotifications: 'on' };
    const saved = await t.app.inject({ method: 'POST', url: '/dashboard/settings', ...form(b, { ...current, defaultLocale: 'de' }) });
    assert.equal(saved.statusCode, 303, saved.body);
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().defaultLocale, 'de');
    const shown = await t.app.inject({ url: '/dashboard/settings', headers: { cookie: b.cookie } });
    assert.match(shown.body, /<option value="de" lang="de" selected>Deutsch<\/option>/);
    const refused = await t.app.inject({ method: 'POST', url: '/dashboard/settings', ...form(b, { ...current, defaultLocale: 'xx' }) });
    assert.equal(refused.statusCode, 400);
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().defaultLocale, 'de');
  });
});
