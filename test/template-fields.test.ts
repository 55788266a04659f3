/**
 * The template field routes (POST/PATCH/DELETE /v1/templates/{id}/fields…) and the template editor's
 * dashboard pages: the fields they place are the ones envelopes made from the template carry.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { signInDashboard, type DashboardBrowser } from './fixtures/dashboard.js';
import { assertError, makePdf, multipart, newKey, uniq } from './fixtures/envelopes.js';

let t: TestApp;
let browser: DashboardBrowser;
before(async () => {
  t = await createTestApp();
  browser = await signInDashboard(t);
});
after(() => t?.close());

type Field = { fieldId: number; type: string; recipientId: number; recipientEmail: string; page: number; positionXPercent: number; positionYPercent: number; widthPercent: number; heightPercent: number };

const json = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown, apiKey = t.customer.apiKey) =>
  t.app.inject({ method, url, headers: { ...bearer(apiKey), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });

/** A two-page template with two SIGNER slots, one signature each. */
async function createTemplate(apiKey = t.customer.apiKey): Promise<{ templateId: string; fields: Field[] }> {
  const pdf = await makePdf([[{ text: 'Page one', x: 72, y: 720 }], [{ text: 'Page two', x: 72, y: 720 }]]);
  const sig = (recipientId: number, x: number) => ({ type: 'SIGNATURE', recipientId, page: 1, positionXPercent: x, positionYPercent: 80, widthPercent: 20, heightPercent: 5 });
  const payload = { title: 'Lease', recipients: [1, 2].map((n) => ({ email: `slot${n}@example.com`, name: `Slot ${n}`, role: 'SIGNER' })), fields: [sig(1, 10), sig(2, 50)] };
  const mp = multipart([{ name: 'file', value: pdf, filename: 'lease.pdf' }, { name: 'payload', value: JSON.stringify(payload) }]);
  const res = await t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(apiKey), 'content-type': mp.contentType }, payload: mp.body });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

describe('template fields', () => {
  test('add (by slot id or slot email), move and remove; an envelope made from the template carries them', async () => {
    const tpl = await createTemplate();
    const added = await json('POST', `/v1/templates/${tpl.templateId}/fields`, { fields: [
      { type: 'DATE', recipientId: 2, page: 2, positionXPercent: 30, positionYPercent: 40, widthPercent: 15, heightPercent: 4 },
      { type: 'TEXT', recipientEmail: 'slot1@example.com', page: 1, positionXPercent: 5, positionYPercent: 5, widthPercent: 20, heightPercent: 4 },
    ] });
    assert.equal(added.statusCode, 200, added.body);
    const [date, text] = added.json().fields as Field[];
    assert.deepEqual([date.fieldId, date.recipientId, date.recipientEmail], [3, 2, 'slot2@example.com']);
    assert.equal(text.recipientId, 1);

    const moved = await json('PATCH', `/v1/templates/${tpl.templateId}/fields/${date.fieldId}`, { positionXPercent: 61.25, positionYPercent: 12.5 });
    assert.equal(moved.statusCode, 200, moved.body);
    assert.deepEqual([moved.json().positionXPercent, moved.json().positionYPercent, moved.json().widthPercent], [61.25, 12.5, 15]);
    assert.equal((await json('DELETE', `/v1/templates/${tpl.templateId}/fields/${text.fieldId}`)).statusCode, 204);

    const stored = (await json('GET', `/v1/templates/${tpl.templateId}`)).json().fields as Field[];
    assert.deepEqual(stored.map((f) => f.fieldId), [1, 2, 3]);

    const people = [{ id: 1, email: uniq('tenant'), name: 'Tenant' }, { id: 2, email: uniq('owner'), name: 'Owner' }];
    const made = await t.app.inject({ method: 'POST', url: `/v1/templates/${tpl.templateId}/from-template`, headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json', 'idempotency-key': newKey() }, payload: JSON.stringify({ recipients: people, sendImmediately: false }) });
    assert.equal(made.statusCode, 201, made.body);
    const onEnvelope = (made.json().fields as Field[]).find((f) => f.type === 'DATE')!;
    assert.equal(onEnvelope.recipientEmail, people[1].email);
    assert.deepEqual([onEnvelope.page, onEnvelope.positionXPercent, onEnvelope.positionYPercent], [2, 61.25, 12.5]);
  });

  test('bad input: unknown slot, off the page, a page past the end, a bad field id, the last signature of a signer', async () => {
    const tpl = await createTemplate();
    const url = `/v1/templates/${tpl.templateId}/fields`;
    const f = { type: 'TEXT', page: 1, positionXPercent: 10, positionYPercent: 10, widthPercent: 10, heightPercent: 5 };
    assertError(await json('POST', url, { fields: [{ ...f, recipientId: 3 }] }), 404, 'RECIPIENT_NOT_FOUND');
    assertError(await json('POST', url, { fields: [{ ...f, recipientEmail: 'nobody@example.com' }] }), 404, 'RECIPIENT_NOT_FOUND');
    assertError(await json('POST', url, { fields: [f] }), 400, 'VALIDATION_ERROR');
    assertError(await json('POST', url, { fields: [{ ...f, recipientId: 1, page: 3 }] }), 400, 'VALIDATION_ERROR');
    assertError(await json('POST', url, { fields: [] }), 400, 'VALIDATION_ERROR');
    assertError(await json('POST', url, { fields: Array.from({ length: 201 }, () => ({ ...f, recipientId: 1 })) }), 400, 'VALIDATION_ERROR');
    assertError(await json('PATCH', `${url}/1`, { positionXPercent: 90 }), 400, 'VALIDATION_ERROR');
    assertError(await json('PATCH', `${url}/1`, { colour: 'red' }), 400, 'VALIDATION_ERROR');
    assertError(await json('PATCH', `${url}/abc`, { positionXPercent: 1 }), 400, 'INVALID_FIELD_ID');
    assertError(await json('PATCH', `${url}/99`, { positionXPercent: 1 }), 400, 'INVALID_FIELD_ID');
    assertError(await json('DELETE', `${url}/1`), 400, 'VALIDATION_ERROR');
    assertError(await json('PATCH', '/v1/templates/not-a-uuid/fields/1', { positionXPercent: 1 }), 400, 'INVALID_ID');
  });

  test("another customer's template is 404 on every field route and in the editor", async () => {
    const other = await t.createCustomer(100);
    const theirs = await createTemplate(other.apiKey);
    const url = `/v1/templates/${theirs.templateId}/fields`;
    assertError(await json('POST', url, { fields: [{ type: 'TEXT', recipientId: 1, positionXPercent: 1, positionYPercent: 1, widthPercent: 5, heightPercent: 5 }] }), 404, 'TEMPLATE_NOT_FOUND');
    assertError(await json('PATCH', `${url}/1`, { positionXPercent: 1 }), 404, 'TEMPLATE_NOT_FOUND');
    assertError(await json('DELETE', `${url}/2`), 404, 'TEMPLATE_NOT_FOUND');
    assert.equal((await t.app.inject({ url: `/dashboard/templates/${theirs.templateId}/prepare`, headers: { cookie: browser.cookie } })).statusCode, 404);
    assert.equal((await t.app.inject({ url: `/dashboard/templates/${theirs.templateId}/prepare/document`, headers: { cookie: browser.cookie } })).statusCode, 404);
  });

  test('the dashboard lists templates with a link to the editor; the editor has the slots, no Send, and saves with the cookie and X-CSRF-Token', async () => {
    const tpl = await createTemplate();
    const list = await t.app.inject({ url: '/dashboard/templates', headers: { cookie: browser.cookie } });
    assert.equal(list.statusCode, 200);
    assert.match(list.body, new RegExp(`href="/dashboard/templates/${tpl.templateId}/prepare"`));
    assert.match(list.body, /href="\/dashboard\/templates"[^>]*>Templates</);
    const page = await t.app.inject({ url: `/dashboard/templates/${tpl.templateId}/prepare`, headers: { cookie: browser.cookie } });
    assert.equal(page.statusCode, 200, page.body);
    assert.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/);
    assert.doesNotMatch(page.body, /id="send"/);
    assert.match(page.body, /<a id="done"[^>]*href="\/dashboard\/templates"/);
    assert.match(page.body, /Recipient slot/);
    assert.match(page.body, new RegExp(`data-fields-url="/v1/templates/${tpl.templateId}/fields"`));
    const doc = await t.app.inject({ url: `/dashboard/templates/${tpl.templateId}/prepare/document`, headers: { cookie: browser.cookie } });
    assert.equal(doc.headers['content-type'], 'application/pdf');

    const url = `/v1/templates/${tpl.templateId}/fields/1`;
    const body = JSON.stringify({ positionXPercent: 44 });
    assertError(await t.app.inject({ method: 'PATCH', url, headers: { cookie: browser.cookie, 'content-type': 'application/json' }, payload: body }), 403, 'CSRF_TOKEN_INVALID');
    const ok = await t.app.inject({ method: 'PATCH', url, headers: { cookie: browser.cookie, 'x-csrf-token': browser.csrf, 'content-type': 'application/json' }, payload: body });
    assert.equal(ok.statusCode, 200, ok.body);
  });
});
