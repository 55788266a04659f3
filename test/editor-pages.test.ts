// test-lane: once (the editor's pages; the editing routes' SQL runs on both stores in field-patch and envelopes)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './harness.js';
import { signInDashboard, type DashboardBrowser } from './fixtures/dashboard.js';
import { assertError, createEnvelope, getEnvelope, newKey, person, sigField } from './fixtures/envelopes.js';

let t: TestApp;
let browser: DashboardBrowser;
before(async () => {
  t = await createTestApp();
  browser = await signInDashboard(t);
});
after(() => t.close());

async function draft() {
  const s = person('editor');
  return createEnvelope(t, { recipients: [s], draft: true, fields: [sigField(s.email)] });
}

describe('the field editor in the dashboard', () => {
  test("a DRAFT's page links to its editor; the editor carries the draft's fields, the CSRF token and a CSP with the pdf.js worker", async () => {
    const env = await draft();
    const detail = await t.app.inject({ url: `/dashboard/envelopes/${env.envelopeId}`, headers: { cookie: browser.cookie } });
    assert.match(detail.body, new RegExp(`href="/dashboard/envelopes/${env.envelopeId}/prepare"`));
    const page = await t.app.inject({ url: `/dashboard/envelopes/${env.envelopeId}/prepare`, headers: { cookie: browser.cookie } });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-security-policy']), /worker-src 'self'/);
    assert.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/);
    const state = JSON.parse(/<script type="application\/json" id="editor-state">(.*?)<\/script>/s.exec(page.body)![1]);
    assert.equal(state.fields[0].fieldId, env.fields[0].fieldId);
    assert.match(page.body, /<meta name="csrf-token" content="[^"]+">/);
    const doc = await t.app.inject({ url: `/dashboard/envelopes/${env.envelopeId}/prepare/document`, headers: { cookie: browser.cookie } });
    assert.equal(doc.headers['content-type'], 'application/pdf');
  });

  test('a sent envelope has no editor (409 page), and no link to it', async () => {
    const sent = await createEnvelope(t, { recipients: [person('editor-sent')] });
    const detail = await t.app.inject({ url: `/dashboard/envelopes/${sent.envelopeId}`, headers: { cookie: browser.cookie } });
    assert.doesNotMatch(detail.body, /\/prepare"/);
    const page = await t.app.inject({ url: `/dashboard/envelopes/${sent.envelopeId}/prepare`, headers: { cookie: browser.cookie } });
    assert.equal(page.statusCode, 409);
    assert.match(page.body, /ENVELOPE_NOT_DRAFT/);
  });

  test("another customer's draft is 404 in the editor", async () => {
    const other = await t.createCustomer(100);
    const theirs = await createEnvelope(t, { recipients: [person('editor-other')], draft: true }, { apiKey: other.apiKey });
    assert.equal((await t.app.inject({ url: `/dashboard/envelopes/${theirs.envelopeId}/prepare`, headers: { cookie: browser.cookie } })).statusCode, 404);
  });

  test('the field routes take the session cookie with X-CSRF-Token, and refuse it without', async () => {
    const env = await draft();
    const url = `/v1/envelopes/${env.envelopeId}/fields/${env.fields[0].fieldId}`;
    const body = JSON.stringify({ positionXPercent: 44 });
    assertError(await t.app.inject({ method: 'PATCH', url, headers: { cookie: browser.cookie, 'content-type': 'application/json' }, payload: body }), 403, 'CSRF_TOKEN_INVALID');
    const ok = await t.app.inject({ method: 'PATCH', url, headers: { cookie: browser.cookie, 'x-csrf-token': browser.csrf, 'content-type': 'application/json' }, payload: body });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal((await getEnvelope(t, env.envelopeId)).fields[0].positionXPercent, 44);
    // The cookie is no credential for routes that did not open to it.
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${env.envelopeId}`, headers: { cookie: browser.cookie, 'x-csrf-token': browser.csrf, 'idempotency-key': newKey() } })).statusCode, 401);
  });
});
