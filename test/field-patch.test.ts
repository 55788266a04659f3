import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError, createEnvelope, getEnvelope, person, sigField } from './fixtures/envelopes.js';

let t: TestApp;
before(async () => (t = await createTestApp()));
after(() => t.close());

const patch = (id: string, fid: number | string, body: unknown, apiKey = t.customer.apiKey) =>
  t.app.inject({ method: 'PATCH', url: `/v1/envelopes/${id}/fields/${fid}`, headers: { ...bearer(apiKey), 'content-type': 'application/json' }, payload: JSON.stringify(body) });

async function draft() {
  const s = person('patch');
  const env = await createEnvelope(t, { recipients: [s], draft: true, fields: [sigField(s.email)] });
  return { env, field: env.fields[0] };
}

describe('PATCH /v1/envelopes/{id}/fields/{fieldId}', () => {
  test('moves and resizes a draft field; the stored copy and the engine copy both change, the id stays', async () => {
    const { env, field } = await draft();
    const res = await patch(env.envelopeId, field.fieldId, { page: 2, positionXPercent: 40.5, positionY: 12.25, widthPercent: 20 });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.fieldId, field.fieldId);
    assert.deepEqual([body.page, body.positionXPercent, body.positionYPercent, body.widthPercent, body.heightPercent], [2, 40.5, 12.25, 20, field.heightPercent]);
    const stored = (await getEnvelope(t, env.envelopeId)).fields[0];
    assert.deepEqual([stored.page, stored.positionX, stored.positionY, stored.width], [2, 40.5, 12.25, 20]);
    // The engine's copy is what the signing page and the seal use: send, then read the recipient's session.
    const sent = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${env.envelopeId}/send`, headers: { ...bearer(t.customer.apiKey), 'idempotency-key': `k-${field.fieldId}-send` } });
    assert.equal(sent.statusCode, 200, sent.body);
    const link = sent.json().recipients[0].signingUrl as string;
    const session = await t.app.inject({ url: `/sign/${new URL(link).pathname.split('/').pop()}/session` });
    const f = session.json().fields[0];
    assert.deepEqual([f.page, f.positionX ?? f.x, f.positionY ?? f.y], [2, 40.5, 12.25]);
  });

  test('refuses once the envelope is no longer a draft (409 ENVELOPE_NOT_DRAFT)', async () => {
    const s = person('patch-sent');
    const env = await createEnvelope(t, { recipients: [s] });
    assertError(await patch(env.envelopeId, env.fields[0].fieldId, { positionXPercent: 5 }), 409, 'ENVELOPE_NOT_DRAFT');
  });

  test("another customer's envelope is 404, and so is an unknown id", async () => {
    const { env, field } = await draft();
    const other = await t.createCustomer(100);
    assertError(await patch(env.envelopeId, field.fieldId, { positionXPercent: 5 }, other.apiKey), 404, 'ENVELOPE_NOT_FOUND');
    assertError(await patch('00000000-0000-4000-8000-000000000000', field.fieldId, { positionXPercent: 5 }), 404, 'ENVELOPE_NOT_FOUND');
  });

  test('out of the page: past the right or bottom edge after the merge, or a page the document lacks', async () => {
    const { env, field } = await draft();
    // x alone is fine as a number, but with the field's width of 25 it would leave the page.
    const right = assertError(await patch(env.envelopeId, field.fieldId, { positionXPercent: 90 }), 400, 'VALIDATION_ERROR');
    assert.equal(right.details[0].path, 'body.widthPercent');
    assertError(await patch(env.envelopeId, field.fieldId, { positionYPercent: 99 }), 400, 'VALIDATION_ERROR');
    const page = assertError(await patch(env.envelopeId, field.fieldId, { page: 3 }), 400, 'VALIDATION_ERROR');
    assert.equal(page.details[0].path, 'body.page');
    assertError(await patch(env.envelopeId, field.fieldId, { positionXPercent: 101 }), 400, 'VALIDATION_ERROR');
    assertError(await patch(env.envelopeId, field.fieldId, { positionXPercent: -1 }), 400, 'VALIDATION_ERROR');
    // Nothing moved.
    assert.equal((await getEnvelope(t, env.envelopeId)).fields[0].positionXPercent, field.positionXPercent);
  });

  test('bad types, unknown properties, an empty body, a bad or unknown field id', async () => {
    const { env, field } = await draft();
    assertError(await patch(env.envelopeId, field.fieldId, { positionXPercent: '10' }), 400, 'VALIDATION_ERROR');
    assertError(await patch(env.envelopeId, field.fieldId, { page: 1.5 }), 400, 'VALIDATION_ERROR');
    assertError(await patch(env.envelopeId, field.fieldId, { type: 'TEXT' }), 400, 'VALIDATION_ERROR');
    assertError(await patch(env.envelopeId, field.fieldId, { widthPercent: 0 }), 400, 'VALIDATION_ERROR');
    assertError(await patch(env.envelopeId, field.fieldId, {}), 400, 'VALIDATION_ERROR');
    assertError(await patch(env.envelopeId, 'abc', { positionXPercent: 5 }), 400, 'INVALID_FIELD_ID');
    assertError(await patch(env.envelopeId, field.fieldId + 100000, { positionXPercent: 5 }), 400, 'INVALID_FIELD_ID');
  });
});
