import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { FIXTURE_PATH, registerBillableFixture } from './fixtures/billable-route.js';

let t: TestApp;
before(async () => {
  t = await createTestApp({ beforeReady: (app, c) => registerBillableFixture(app, c) });
});
after(() => t.close());

test('account shows the balance', async () => {
  const res = await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) });
  assert.equal(res.statusCode, 200);
  assert.equal(res.json().creditsFormatted, '$5.00');
});

test('fixture charge and replay', async () => {
  const headers = { ...bearer(t.customer.apiKey), 'idempotency-key': 'k1', 'content-type': 'application/json' };
  const a = await t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers, payload: { title: 'x' } });
  assert.equal(a.statusCode, 201, a.body);
  const b = await t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers, payload: { title: 'x' } });
  assert.equal(b.statusCode, 201);
  assert.equal(b.body, a.body);
  assert.equal(b.headers['idempotent-replayed'], 'true');
  const acct = await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) });
  assert.equal(acct.json().creditsCents, 490);
});
