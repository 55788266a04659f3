/**
 * PostgreSQL refuses the NUL character (U+0000) in text and jsonb, so a NUL in anything a caller sends
 * used to fail its statement and answer 500 INTERNAL_ERROR (with the value in the error log). One rule
 * at the edge now refuses it as 400 VALIDATION_ERROR naming the field, whatever the route: signer
 * input, the API's JSON and multipart payloads, forms, queries. Runs on both stores.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, OPS_TOKEN, type TestApp } from './harness.js';
import { assertError, consent, createEnvelope, envelopeBody, multipart, person, postMultipart, recipientToken, samplePdf, session, sigField, signer } from './fixtures/envelopes.js';

const NUL = '\u0000';
const json = { 'content-type': 'application/json' };

let t: TestApp;
before(async () => {
  t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
});
after(() => t?.close());

/** The answer is 400 VALIDATION_ERROR whose details name `path`. */
function refused(res: { statusCode: number; body: string }, path: string): void {
  const body = assertError(res, 400, 'VALIDATION_ERROR');
  assert.deepEqual(body.details, [{ path, message: 'must not contain the NUL character (U+0000)' }], res.body);
}

describe('signer input', () => {
  /** An envelope whose one signer has a SIGNATURE and a TEXT field; the signer's token. */
  async function signing(): Promise<string> {
    const alice = person('nul-signer');
    const env = await createEnvelope(t, {
      title: 'NUL',
      recipients: [alice],
      fields: [sigField(alice.email), sigField(alice.email, { type: 'TEXT', positionYPercent: 40 })],
    });
    return recipientToken(env, alice.email);
  }
  const post = (token: string, action: string, body: unknown) => t.app.inject({ method: 'POST', url: `/sign/${token}/${action}`, headers: json, payload: JSON.stringify(body) });

  test('a decline reason, a typed signature and a TEXT value with a NUL are 400 VALIDATION_ERROR; nothing is recorded', async () => {
    const token = await signing();
    const fields = (await session(t, token)).json().fields as { fieldId: number; type: string }[];
    const text = fields.find((f) => f.type === 'TEXT')!.fieldId;

    refused(await post(token, 'reject', { reason: `no${NUL}thanks` }), 'body.reason');
    refused(await post(token, 'complete', { fields: [], signature: { kind: 'typed', text: `Alice${NUL}` } }), 'body.signature.text');
    refused(await post(token, 'complete', { fields: [{ fieldId: text, value: `a${NUL}b` }], signature: { kind: 'typed', text: 'Alice' } }), 'body.fields.0.value');

    const after = (await session(t, token)).json();
    assert.equal(after.recipient.status, 'PENDING');
    assert.equal(after.canAct, true);
    // Other control characters are text PostgreSQL keeps: a tab in a value is still accepted.
    assert.equal((await consent(t, token)).statusCode, 200);
    const ok = await post(token, 'complete', { fields: [{ fieldId: text, value: 'a\tb' }], signature: { kind: 'typed', text: 'Alice' } });
    assert.equal(ok.statusCode, 200, ok.body);
  });
});

describe('the API', () => {
  test("an envelope's title, a recipient's name and the meta in the multipart payload", async () => {
    const alice = signer(1);
    const base = { title: 'Fine', recipients: [alice], fields: [sigField(alice.email)] };
    const cases: [unknown, string][] = [
      [{ ...base, title: `T${NUL}` }, 'payload.title'],
      [{ ...base, recipients: [{ ...alice, name: `A${NUL}` }] }, 'payload.recipients.0.name'],
      [{ ...base, meta: { subject: 'Hi', message: `m${NUL}` } }, 'payload.meta.message'],
    ];
    for (const [payload, path] of cases) refused(await postMultipart(t, envelopeBody([await samplePdf()], payload)), path);
    for (const [payload, path] of cases.slice(0, 1)) refused(await postMultipart(t, envelopeBody([await samplePdf()], payload), { url: '/v1/envelopes/draft' }), path);
    // A template's payload is read the same way.
    const template = multipart([
      { name: 'file', value: await samplePdf(), filename: 't.pdf' },
      { name: 'payload', value: JSON.stringify({ ...base, title: `T${NUL}` }) },
    ]);
    refused(await t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(t.customer.apiKey), 'content-type': template.contentType }, payload: template.body }), 'payload.title');
  });

  test('JSON bodies: a webhook, a template rename, a verification, an operator call; a query; a JSON-RPC call to /mcp', async () => {
    const auth = bearer(t.customer.apiKey);
    refused(await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: auth, payload: { url: 'http://127.0.0.1:9/hook', events: ['*'], description: `d${NUL}` } }), 'body.description');
    const tpl = multipart([
      { name: 'file', value: await samplePdf(), filename: 't.pdf' },
      { name: 'payload', value: JSON.stringify({ title: 'T', recipients: [signer(1)], fields: [sigField(signer(1).email)] }) },
    ]);
    const created = await t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...auth, 'content-type': tpl.contentType }, payload: tpl.body });
    assert.equal(created.statusCode, 201, created.body);
    refused(await t.app.inject({ method: 'PUT', url: `/v1/templates/${created.json().templateId}`, headers: auth, payload: { title: `x${NUL}` } }), 'body.title');
    refused(
      await t.app.inject({ method: 'POST', url: '/v1/verifications', headers: { ...auth, 'idempotency-key': `nul-${Date.now()}` }, payload: { type: 'email', email: 'v@example.com', name: `V${NUL}` } }),
      'body.name',
    );
    refused(await t.app.inject({ method: 'POST', url: '/ops/customers', headers: { authorization: `Bearer ${OPS_TOKEN}` }, payload: { email: 'o@example.com', name: `O${NUL}` } }), 'body.name');
    // A key holding a NUL is named as well (jsonb refuses it as much as a value).
    refused(await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...auth, ...json }, payload: `{"url":"http://127.0.0.1:9/hook","events":["*"],"k\\u0000":1}` }), 'body.k\\0');
    refused(await t.app.inject({ url: '/v1/envelopes?wallet=%00', headers: auth }), 'querystring.wallet');
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_webhook', arguments: { url: 'http://127.0.0.1:9/hook', events: ['*'], description: `d${NUL}` } } };
    refused(await t.app.inject({ method: 'POST', url: '/mcp', headers: { ...auth, accept: 'application/json, text/event-stream' }, payload: call }), 'body.params.arguments.description');
  });

  test('a dashboard form is covered as well: the page names the field', async () => {
    // The CSRF cookie and token of the sign-in page, as a browser gets them.
    const page = await t.app.inject({ url: '/dashboard/sign-in' });
    const cookie = [page.headers['set-cookie']].flat().find((c) => c?.startsWith('svc_csrf='))!.split(';')[0];
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page.body)![1];
    const res = await t.app.inject({
      method: 'POST',
      url: '/dashboard/sign-in/email',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: csrf, email: `a${NUL}b@example.com` }).toString(),
    });
    assert.equal(res.statusCode, 400, res.body);
    assert.match(res.body, /body\.email: must not contain the NUL character/);
  });
});
