import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { ConfigError, loadConfig } from '../src/config.js';
import { createTestApp, type TestApp } from './harness.js';
import { envelopeBody, newKey, samplePdf, sigField, signer } from './fixtures/envelopes.js';

/** x402 without a chain: configuration, and the refusals that happen before any facilitator is asked. */
const X402_ENV = {
  // Nothing listens there: none of these tests may reach the facilitator.
  X402_FACILITATOR_URL: 'http://127.0.0.1:9',
  X402_NETWORK: 'eip155:84532',
  X402_ASSET: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  X402_PAY_TO: '0x000000000000000000000000000000000000dEaD',
  X402_ASSET_NAME: 'USDC',
};

// A well-formed header whose contents do not matter for the refusals below.
const PAYMENT = encodePaymentSignatureHeader({ x402Version: 2, accepted: {} as never, payload: {} });

describe('x402 configuration', () => {
  const base = { DATA_DIR: '/tmp/signet-x402-config', OPS_TOKEN: 'o'.repeat(32), JWT_SECRET: 'j'.repeat(64), SIGNING_LINK_SECRET: 's'.repeat(64) };

  test('off when unset', () => {
    assert.equal(loadConfig(base).x402, undefined);
  });

  test('on with the five variables; X402_MIN_PRICE defaults to USD 0.001, version to 2', () => {
    const c = loadConfig({ ...base, ...X402_ENV }).x402!;
    assert.equal(c.minPriceMicros, 1000n);
    assert.equal(c.assetVersion, '2');
    assert.equal(c.network, 'eip155:84532');
    assert.equal(loadConfig({ ...base, ...X402_ENV, X402_MIN_PRICE: '0.25' }).x402!.minPriceMicros, 250_000n);
  });

  test('half a configuration, or a bad value, fails at start naming the variable', () => {
    const { X402_PAY_TO: _, ...partial } = X402_ENV;
    assert.throws(() => loadConfig({ ...base, ...partial }), (err) => err instanceof ConfigError && /X402_PAY_TO/.test(err.message));
    assert.throws(() => loadConfig({ ...base, ...X402_ENV, X402_NETWORK: 'base' }), (err) => err instanceof ConfigError && /X402_NETWORK/.test(err.message));
    assert.throws(() => loadConfig({ ...base, ...X402_ENV, X402_MIN_PRICE: '0' }), (err) => err instanceof ConfigError && /X402_MIN_PRICE/.test(err.message));
  });
});

describe('x402 off', () => {
  let t: TestApp;
  before(async () => (t = await createTestApp()));
  after(() => t.close());

  test('a payment header while x402 is not configured: 400 X402_NOT_CONFIGURED', async () => {
    for (const header of ['payment-signature', 'x-payment']) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { [header]: PAYMENT, 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'https://example.com/h', events: ['*'] }) });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'X402_NOT_CONFIGURED');
    }
  });

  test('no credentials stays 401 UNAUTHORIZED (no 402 while x402 is off)', async () => {
    const mp = envelopeBody([await samplePdf()], { title: 'x', recipients: [signer(1)], fields: [sigField(signer(1).email)] });
    const res = await t.app.inject({ method: 'POST', url: '/v1/envelopes', headers: { 'content-type': mp.contentType, 'idempotency-key': newKey() }, payload: mp.body });
    assert.equal(res.statusCode, 401);
    assert.equal(res.headers['payment-required'], undefined);
  });
});

describe('x402 on, refusals before the facilitator', () => {
  let t: TestApp;
  before(async () => (t = await createTestApp({ env: X402_ENV })));
  after(() => t.close());

  test('x402 on /v1/account/products (read and enable): 400 X402_NOT_APPLICABLE', async () => {
    const list = await t.app.inject({ url: '/v1/account/products', headers: { 'payment-signature': PAYMENT } });
    assert.equal(list.statusCode, 400, list.body);
    assert.equal(list.json().code, 'X402_NOT_APPLICABLE');
    const enable = await t.app.inject({ method: 'POST', url: '/v1/account/products/service_id/enable', headers: { 'x-payment': PAYMENT } });
    assert.equal(enable.statusCode, 400, enable.body);
    assert.equal(enable.json().code, 'X402_NOT_APPLICABLE');
  });

  test('a header that is not a payment payload: 402 PAYMENT_INVALID, nothing created', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { 'payment-signature': 'not base64 json', 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'https://example.com/h', events: ['*'] }) });
    assert.equal(res.statusCode, 402, res.body);
    assert.equal(res.json().code, 'PAYMENT_INVALID');
    const other = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { 'payment-signature': PAYMENT, 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'https://example.com/h', events: ['*'] }) });
    assert.equal(other.statusCode, 402, other.body);
    assert.equal(other.json().reason, 'invalid_payload');
  });

  test('an API key still works as before on a payable route', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { authorization: `Bearer ${t.customer.apiKey}`, 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'https://example.com/h', events: ['*'] }) });
    assert.notEqual(res.statusCode, 402, res.body);
    assert.notEqual(res.statusCode, 401, res.body);
  });

  test('no credentials with the facilitator unreachable: 503 RELAYSTATION_UNAVAILABLE (cannot quote a price)', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'https://example.com/h', events: ['*'] }) });
    assert.equal(res.statusCode, 503, res.body);
    assert.equal(res.json().code, 'RELAYSTATION_UNAVAILABLE');
  });
});

describe('x402 in the discovery documents', () => {
  let t: TestApp;
  before(async () => (t = await createTestApp()));
  after(() => t.close());

  test('OpenAPI and llms.txt say what an x402 caller pays on a mutation SPEC.md does not price', async () => {
    const llms = await t.app.inject({ url: '/llms.txt' });
    assert.match(llms.body, /X402_MIN_PRICE \(default USD 0\.001\)/);
    const openapi = await t.app.inject({ url: '/openapi.json' });
    assert.match(openapi.json().info.description, /X402_MIN_PRICE \(default USD 0\.001\)/);
  });
});
