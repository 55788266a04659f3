/**
 * Every customer route passes the common checks (test/fixtures/common-route-tests.ts). The last test
 * fails when a customer route is missing from the table, so a new module cannot skip them.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { describeCommonRouteTests, envelopeCreateBody, type RouteCase } from './fixtures/common-route-tests.js';
import { envelopeBody, multipart, PNG_DATA_URL, postMultipart, samplePdf, sigField, signer } from './fixtures/envelopes.js';

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

/** A template create body: one SIGNER slot with its SIGNATURE field, the shared sample PDF as `file`. */
const templateCreateBody = async () => ({
  multipart: multipart([
    { name: 'file', value: await samplePdf(), filename: 'template.pdf' },
    { name: 'payload', value: JSON.stringify({ title: 'Common', recipients: [signer(1)], fields: [sigField(signer(1).email)] }) },
  ]),
});

async function templateOf(app: TestApp, customer: TestCustomer): Promise<string> {
  const { multipart: mp } = await templateCreateBody();
  const res = await app.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(customer.apiKey), 'content-type': mp.contentType }, payload: mp.body });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().templateId;
}

const mappedSlot = () => ({ recipients: [{ id: 1, email: 'mapped@example.com', name: 'Mapped' }] });

async function verificationOf(app: TestApp, customer: TestCustomer): Promise<string> {
  const res = await app.app.inject({ method: 'POST', url: '/v1/verifications', headers: { ...bearer(customer.apiKey), 'idempotency-key': `common-v-${Math.random()}` }, payload: { type: 'email', email: 'owned@example.com' } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().verificationId;
}

async function bulkSendOf(app: TestApp, customer: TestCustomer): Promise<string> {
  const res = await app.app.inject({ method: 'POST', url: `/v1/templates/${await templateOf(app, customer)}/bulk-sends`, headers: { ...bearer(customer.apiKey), 'idempotency-key': `common-b-${Math.random()}` }, payload: { rows: [mappedSlot()] } });
  assert.equal(res.statusCode, 202, res.body);
  return res.json().bulkSendId;
}

const envelope = { resource: draftOf, notFound: 'ENVELOPE_NOT_FOUND' } as const;
const bulkSend = { resource: bulkSendOf, notFound: 'BULK_SEND_NOT_FOUND' } as const;
const webhook = { resource: webhookOf, notFound: 'WEBHOOK_NOT_FOUND' } as const;
const verification = { resource: verificationOf, notFound: 'VERIFICATION_NOT_FOUND' } as const;
const template = { resource: templateOf, notFound: 'TEMPLATE_NOT_FOUND' } as const;

const CASES: RouteCase[] = [
  // Account
  { method: 'GET', url: '/v1/account' },
  { method: 'GET', url: '/v1/account/usage' },
  { method: 'GET', url: '/v1/account/envelopes' },
  // Wallet JWT only (summary, enable); the common checks still hold: no credential 401, malformed 401.
  { method: 'GET', url: '/v1/account/summary' },
  { method: 'GET', url: '/v1/account/products', noAuthCode: 'MISSING_AUTH' },
  { method: 'POST', url: '/v1/account/products/:product/enable', params: { product: 'service_id' } },
  { method: 'PATCH', url: '/v1/account', body: () => ({ displayName: 'Common Co' }) },
  {
    method: 'PUT',
    url: '/v1/account/logo',
    body: () => ({ multipart: multipart([{ name: 'file', value: Buffer.from(PNG_DATA_URL.split(',')[1], 'base64'), filename: 'logo.png', contentType: 'image/png' }]) }),
    malformed: { body: () => ({ multipart: multipart([{ name: 'file', value: 'not an image', filename: 'logo.png', contentType: 'image/png' }]) }), code: 'LOGO_INVALID' },
  },
  { method: 'DELETE', url: '/v1/account/logo' },
  // Envelopes
  { method: 'POST', url: '/v1/envelopes', body: envelopeCreateBody, billable: true },
  { method: 'POST', url: '/v1/envelopes/draft', body: envelopeCreateBody },
  { method: 'GET', url: '/v1/envelopes' },
  { method: 'GET', url: '/v1/envelopes/:id', ...envelope },
  { method: 'GET', url: '/v1/envelopes/:id/status', ...envelope },
  { method: 'DELETE', url: '/v1/envelopes/:id', ...envelope },
  { method: 'POST', url: '/v1/envelopes/:id/send', ...envelope, body: () => ({ meta: { subject: 'Please sign' } }), billable: true },
  { method: 'POST', url: '/v1/envelopes/:id/resend', ...envelope },
  { method: 'POST', url: '/v1/envelopes/:id/recipients/:recipient/link', ...envelope, params: { recipient: '1' } },
  { method: 'PATCH', url: '/v1/envelopes/:id/recipients/:recipient', ...envelope, params: { recipient: '1' }, body: () => ({ name: 'Renamed Signer' }) },
  { method: 'POST', url: '/v1/envelopes/:id/recipients/:recipient/embed-link', ...envelope, params: { recipient: '1' } },
  { method: 'GET', url: '/v1/envelopes/:id/download', ...envelope },
  { method: 'GET', url: '/v1/envelopes/:id/attachments', ...envelope },
  { method: 'GET', url: '/v1/envelopes/:id/attachments/:attachmentId', ...envelope, params: { attachmentId: '00000000-0000-4000-8000-000000000000' } },
  { method: 'POST', url: '/v1/envelopes/:id/fields', ...envelope, body: () => ({ fields: [sigField(signer(1).email)] }) },
  { method: 'POST', url: '/v1/envelopes/:id/prepare-link', ...envelope },
  { method: 'PATCH', url: '/v1/envelopes/:id/fields/:fid', ...envelope, params: { fid: '1' }, body: () => ({ positionXPercent: 5 }) },
  { method: 'DELETE', url: '/v1/envelopes/:id/fields/:fid', ...envelope, params: { fid: '1' } },
  // Templates
  { method: 'POST', url: '/v1/templates', body: templateCreateBody },
  { method: 'GET', url: '/v1/templates' },
  { method: 'GET', url: '/v1/templates/:id', ...template },
  { method: 'PUT', url: '/v1/templates/:id', ...template, body: () => ({ title: 'renamed' }) },
  { method: 'DELETE', url: '/v1/templates/:id', ...template },
  { method: 'POST', url: '/v1/templates/:id/fields', ...template, body: () => ({ fields: [{ ...sigField(signer(1).email), recipientId: 1 }] }) },
  { method: 'PATCH', url: '/v1/templates/:id/fields/:fid', ...template, params: { fid: '1' }, body: () => ({ positionXPercent: 5 }) },
  { method: 'DELETE', url: '/v1/templates/:id/fields/:fid', ...template, params: { fid: '1' } },
  { method: 'POST', url: '/v1/templates/:id/from-template', ...template, body: mappedSlot, billable: true },
  { method: 'POST', url: '/v1/envelopes/from-template', body: async (customer) => ({ templateId: await templateOf(t, customer), ...mappedSlot() }), billable: true },
  // Bulk sends
  { method: 'POST', url: '/v1/templates/:id/bulk-sends', ...template, body: () => ({ rows: [mappedSlot()] }), billable: true },
  { method: 'GET', url: '/v1/bulk-sends' },
  { method: 'GET', url: '/v1/bulk-sends/:id', ...bulkSend },
  { method: 'POST', url: '/v1/bulk-sends/:id/cancel', ...bulkSend },
  // Webhooks
  { method: 'POST', url: '/v1/webhooks', body: () => ({ url: 'http://127.0.0.1:9/hook', events: ['envelope.completed'] }) },
  { method: 'GET', url: '/v1/webhooks' },
  { method: 'GET', url: '/v1/webhooks/:id', ...webhook },
  { method: 'PUT', url: '/v1/webhooks/:id', ...webhook, body: () => ({ description: 'renamed' }) },
  { method: 'DELETE', url: '/v1/webhooks/:id', ...webhook },
  { method: 'GET', url: '/v1/webhooks/:id/deliveries', ...webhook },
  { method: 'POST', url: '/v1/webhooks/:id/test', ...webhook },
  { method: 'POST', url: '/v1/webhooks/:id/deliveries/:deliveryId/redeliver', ...webhook, params: { deliveryId: '00000000-0000-4000-8000-000000000000' } },
  // Verifications
  { method: 'POST', url: '/v1/verifications', body: () => ({ type: 'email', email: 'common@example.com' }), billable: true },
  { method: 'GET', url: '/v1/verifications' },
  { method: 'GET', url: '/v1/verifications/:id', ...verification },
  { method: 'GET', url: '/v1/verifications/:id/status', ...verification },
  { method: 'POST', url: '/v1/verifications/:id/cancel', ...verification },
  // Documents: free and public (the /verify-document page calls it), so a credential is optional.
  {
    method: 'POST',
    url: '/v1/documents/verify',
    anonymous: true,
    body: async () => ({ multipart: multipart([{ name: 'file', value: await samplePdf(), filename: 'signed.pdf' }]) }),
    malformed: { body: () => ({ multipart: multipart([{ name: 'file', value: 'not a PDF', filename: 'signed.pdf' }]) }), code: 'INVALID_PDF' },
  },
];

describeCommonRouteTests(() => t, CASES);

test('every customer route is in the table above', async () => {
  // llms.txt lists every documented route with its auth, from the same table as the OpenAPI; a
  // route whose credential is optional ("auth optional") still checks one that is sent.
  const text = (await t.app.inject({ url: '/llms.txt' })).body;
  const customerRoutes = [...text.matchAll(/^- (GET|POST|PUT|PATCH|DELETE) (\S+): .*\(auth( optional)?[,)]/gm)].map((m) => `${m[1]} ${m[2].replace(/\{(\w+)\}/g, ':$1')}`);
  assert.ok(customerRoutes.length >= CASES.length - 1, text);
  const listed = new Set(CASES.map((c) => `${c.method} ${c.url}`));
  assert.deepEqual(customerRoutes.filter((r) => !listed.has(r)), [], 'customer routes without the common checks');
});
