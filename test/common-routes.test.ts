/**
 * Every customer route passes the common checks (test/fixtures/common-route-tests.ts). The last test
 * fails when a customer route is missing from the table, so a new module cannot skip them.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { describeCommonRouteTests, envelopeCreateBody, type RouteCase } from './fixtures/common-route-tests.js';
import { envelopeBody, postMultipart, samplePdf, sigField, signer } from './fixtures/envelopes.js';

let t: TestApp;
before(async () => {
  t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
});
after(async () => {
  await t?.close();
});

/** A DRAFT envelope (free) owned by `customer`. */
async function draftOf(app: TestApp, customer: TestCustomer): Promise<string> {
  const body = envelopeBody([await samplePdf()], { title: 'Owned', recipients: [signer(1)], fields: [sigField(signer(1).email)] });
  const res = await postMultipart(app, body, { apiKey: customer.apiKey, url: '/v1/envelopes/draft' });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().envelopeId;
}

async function webhookOf(app: TestApp, customer: TestCustomer): Promise<string> {
  const res = await app.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(customer.apiKey), payload: { url: 'http://127.0.0.1:9/hook', events: ['*'] } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

const envelope = { resource: draftOf, notFound: 'ENVELOPE_NOT_FOUND' } as const;
const webhook = { resource: webhookOf, notFound: 'WEBHOOK_NOT_FOUND' } as const;

const CASES: RouteCase[] = [
  // Account
  { method: 'GET', url: '/v1/account' },
  { method: 'GET', url: '/v1/account/usage' },
  { method: 'GET', url: '/v1/account/envelopes' },
  // Wallet JWT only (summary, enable); the common checks still hold: no credential 401, malformed 401.
  { method: 'GET', url: '/v1/account/summary' },
  { method: 'GET', url: '/v1/account/products', noAuthCode: 'MISSING_AUTH' },
  { method: 'POST', url: '/v1/account/products/:product/enable', params: { product: 'service_id' } },
  // Envelopes
  { method: 'POST', url: '/v1/envelopes', body: envelopeCreateBody, billable: true },
  { method: 'POST', url: '/v1/envelopes/draft', body: envelopeCreateBody },
  { method: 'GET', url: '/v1/envelopes' },
  { method: 'GET', url: '/v1/envelopes/:id', ...envelope },
  { method: 'GET', url: '/v1/envelopes/:id/status', ...envelope },
  { method: 'DELETE', url: '/v1/envelopes/:id', ...envelope },
  { method: 'POST', url: '/v1/envelopes/:id/send', ...envelope, body: () => ({ meta: { subject: 'Please sign' } }), billable: true },
  { method: 'POST', url: '/v1/envelopes/:id/resend', ...envelope },
  { method: 'GET', url: '/v1/envelopes/:id/download', ...envelope },
  { method: 'POST', url: '/v1/envelopes/:id/fields', ...envelope, body: () => ({ fields: [sigField(signer(1).email)] }) },
  { method: 'DELETE', url: '/v1/envelopes/:id/fields/:fid', ...envelope, params: { fid: '1' } },
  // Webhooks
  { method: 'POST', url: '/v1/webhooks', body: () => ({ url: 'http://127.0.0.1:9/hook', events: ['envelope.completed'] }) },
  { method: 'GET', url: '/v1/webhooks' },
  { method: 'GET', url: '/v1/webhooks/:id', ...webhook },
  { method: 'PUT', url: '/v1/webhooks/:id', ...webhook, body: () => ({ description: 'renamed' }) },
  { method: 'DELETE', url: '/v1/webhooks/:id', ...webhook },
  { method: 'GET', url: '/v1/webhooks/:id/deliveries', ...webhook },
];

describeCommonRouteTests(() => t, CASES);

test('every customer route is in the table above', async () => {
  // llms.txt lists every documented route with its auth, from the same table as the OpenAPI.
  const text = (await t.app.inject({ url: '/llms.txt' })).body;
  const customerRoutes = [...text.matchAll(/^- (GET|POST|PUT|PATCH|DELETE) (\S+): .*\(auth[,)]/gm)].map((m) => `${m[1]} ${m[2].replace(/\{(\w+)\}/g, ':$1')}`);
  assert.ok(customerRoutes.length >= CASES.length - 1, text);
  const listed = new Set(CASES.map((c) => `${c.method} ${c.url}`));
  assert.deepEqual(customerRoutes.filter((r) => !listed.has(r)), [], 'customer routes without the common checks');
});
