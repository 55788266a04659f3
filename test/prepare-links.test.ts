import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { prepareLinks } from '../src/db/schema/index.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError, createEnvelope, getEnvelope, newKey, person, sigField } from './fixtures/envelopes.js';

let t: TestApp;
let offsetMs = 0;
before(async () => (t = await createTestApp({ overrides: { clock: () => new Date(Date.now() + offsetMs) } })));
after(() => t.close());

const mint = (id: string, apiKey = t.customer.apiKey) => t.app.inject({ method: 'POST', url: `/v1/envelopes/${id}/prepare-link`, headers: bearer(apiKey) });
const tokenOf = (url: string) => new URL(url).pathname.split('/').pop()!;
const patchWith = (token: string, id: string, fid: number, body: unknown) =>
  t.app.inject({ method: 'PATCH', url: `/v1/envelopes/${id}/fields/${fid}`, headers: { 'x-prepare-token': token, 'content-type': 'application/json' }, payload: JSON.stringify(body) });

async function draft() {
  const s = person('prep');
  return createEnvelope(t, { recipients: [s], draft: true, fields: [sigField(s.email)] });
}

describe('POST /v1/envelopes/{id}/prepare-link', () => {
  test('mints a 30-minute link; the page opens without a session, unframable; its token saves that draft and is not stored in clear', async () => {
    const env = await draft();
    const res = await mint(env.envelopeId);
    assert.equal(res.statusCode, 201, res.body);
    const { url, expiresAt } = res.json();
    const minutes = (Date.parse(expiresAt) - Date.now()) / 60_000;
    assert.ok(minutes > 29 && minutes <= 30.1, `expires in ${minutes} min`);
    const token = tokenOf(url);
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);

    const page = await t.app.inject({ url: `/prepare/${token}` });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/);
    assert.equal(page.headers['referrer-policy'], 'no-referrer');
    assert.match(page.body, /id="editor-state"/);
    const doc = await t.app.inject({ url: `/prepare/${token}/document` });
    assert.equal(doc.statusCode, 200);
    assert.equal(doc.headers['content-type'], 'application/pdf');

    const moved = await patchWith(token, env.envelopeId, env.fields[0].fieldId, { positionXPercent: 33 });
    assert.equal(moved.statusCode, 200, moved.body);
    assert.equal((await getEnvelope(t, env.envelopeId)).fields[0].positionXPercent, 33);

    const rows = await t.container.db.select().from(prepareLinks).where(eq(prepareLinks.envelopeId, env.envelopeId));
    assert.equal(rows.length, 1);
    assert.ok(!JSON.stringify(rows).includes(token), 'the token is not stored');
  });

  test('the token opens its own draft only: another draft of the same customer is 404', async () => {
    const a = await draft();
    const b = await draft();
    const token = tokenOf((await mint(a.envelopeId)).json().url);
    assertError(await patchWith(token, b.envelopeId, b.fields[0].fieldId, { positionXPercent: 33 }), 404, 'ENVELOPE_NOT_FOUND');
    // Nor any route not opened to the editor: reading, cancelling.
    assert.equal((await t.app.inject({ url: `/v1/envelopes/${a.envelopeId}`, headers: { 'x-prepare-token': token } })).statusCode, 401);
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${a.envelopeId}`, headers: { 'x-prepare-token': token } })).statusCode, 401);
  });

  test('expires after 30 minutes: page, document and saves answer 404 PREPARE_LINK_INVALID', async () => {
    const env = await draft();
    const token = tokenOf((await mint(env.envelopeId)).json().url);
    offsetMs = 31 * 60_000;
    try {
      assert.equal((await t.app.inject({ url: `/prepare/${token}` })).statusCode, 404);
      assertError(await t.app.inject({ url: `/prepare/${token}/document` }), 404, 'PREPARE_LINK_INVALID');
      assertError(await patchWith(token, env.envelopeId, env.fields[0].fieldId, { positionXPercent: 33 }), 404, 'PREPARE_LINK_INVALID');
    } finally {
      offsetMs = 0;
    }
  });

  test('a sent envelope: no link is minted (409), and a link minted before the send stops working', async () => {
    const sent = await createEnvelope(t, { recipients: [person('prep-sent')] });
    assertError(await mint(sent.envelopeId), 409, 'ENVELOPE_NOT_DRAFT');
    const env = await draft();
    const token = tokenOf((await mint(env.envelopeId)).json().url);
    const send = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${env.envelopeId}/send`, headers: { 'x-prepare-token': token, 'idempotency-key': newKey() } });
    assert.equal(send.statusCode, 200, send.body);
    assert.equal((await t.app.inject({ url: `/prepare/${token}` })).statusCode, 404);
    assertError(await patchWith(token, env.envelopeId, env.fields[0].fieldId, { positionXPercent: 33 }), 404, 'PREPARE_LINK_INVALID');
  });

  test("another customer's draft is 404; a made-up token is 404", async () => {
    const env = await draft();
    const other = await t.createCustomer(100);
    assertError(await mint(env.envelopeId, other.apiKey), 404, 'ENVELOPE_NOT_FOUND');
    assertError(await patchWith('A'.repeat(43), env.envelopeId, env.fields[0].fieldId, { positionXPercent: 33 }), 404, 'PREPARE_LINK_INVALID');
    assert.equal((await t.app.inject({ url: '/prepare/not-a-token' })).statusCode, 404);
  });
  test("the page may be framed by the account's allowed embedding origins, and by no other", async () => {
    const env = await draft();
    const origins = ['https://app.example.com', 'http://localhost:5173'];
    const set = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' }, payload: { allowedOrigins: origins } });
    assert.equal(set.statusCode, 200, set.body);
    const page = await t.app.inject({ url: `/prepare/${tokenOf((await mint(env.envelopeId)).json().url)}` });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-security-policy']), /frame-ancestors https:\/\/app\.example\.com http:\/\/localhost:5173(;|$)/);
    await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' }, payload: { allowedOrigins: [] } });
  });
});
