// test-lane: once (the error envelope and codes; the routes' SQL runs on both stores in their own files)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ERROR_CODES } from '../src/errors.js';
import { FIXTURE_PATH, registerBillableFixture } from './fixtures/billable-route.js';
import { bearer, createTestApp, OPS_TOKEN, type TestApp } from './harness.js';

const ops = { authorization: `Bearer ${OPS_TOKEN}` };
const json = { 'content-type': 'application/json' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Res = { statusCode: number; json(): any; body: string; headers: Record<string, unknown> };

function assertError(res: Res, status: number, code: string) {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json();
  assert.equal(body.code, code);
  assert.equal(typeof body.error, 'string');
  assert.ok(body.error.length > 0);
  assert.equal(body.requestId, res.headers['x-request-id']);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  return body;
}

describe('ERROR_CODES (src/http/errors.ts)', () => {
  // The Errors table of SPEC.md, with its status; null where SPEC.md leaves the status open.
  const SPEC_CODES: Record<string, number | number[] | null> = {
    UNAUTHORIZED: 401,
    TOKEN_INVALID: 401,
    INVALID_SIGNATURE: 401,
    INVALID_NONCE: [400, 401],
    CHALLENGE_EXPIRED: [400, 401],
    NONCE_ALREADY_USED: [400, 401],
    INVALID_WALLET_ADDRESS: 400,
    MISSING_FIELDS: 400,
    MISSING_AUTH: 401,
    X402_NOT_APPLICABLE: 400,
    WALLET_JWT_REQUIRED: 403,
    INSUFFICIENT_BALANCE: 402,
    INSUFFICIENT_CREDITS: 402,
    MISSING_PDF: 400,
    MISSING_FILE: null,
    MISSING_PAYLOAD: 400,
    INVALID_JSON: 400,
    VALIDATION_ERROR: 400,
    OUT_OF_SCOPE_V1: 400,
    ENVELOPE_NOT_FOUND: 404,
    CANNOT_DELETE_COMPLETED: 400,
    ENVELOPE_ALREADY_COMPLETE: 400,
    ENVELOPE_CANCELLED: 400,
    ALREADY_COMPLETED: null,
    ALL_SIGNED: 400,
    ENVELOPE_NOT_COMPLETE: 400,
    DOWNLOAD_FAILED: 502,
    TEMPLATE_NOT_FOUND: 404,
    INVALID_TEMPLATE_ID: 400,
    INVALID_ID: null,
    RECIPIENT_NOT_FOUND: 404,
    INVALID_TEMPLATE_RECIPIENT_ID: 400,
    FIELD_CREATION_FAILED: 502,
    INVALID_FIELD_ID: 400,
    DELETE_FAILED: 502,
    INVALID_WEBHOOK_URL: 400,
    WEBHOOK_NOT_FOUND: 404,
    DOCUMENSO_UNAVAILABLE: 503,
    RELAYSTATION_UNAVAILABLE: 503,
    SEND_FAILED: 502,
    UPDATE_FAILED: 502,
  };

  test('every code has an error status and a description', () => {
    for (const [code, [status, meaning]] of Object.entries(ERROR_CODES)) {
      assert.match(code, /^[A-Z0-9_]+$/, code);
      assert.ok(Number.isInteger(status) && status >= 400 && status <= 599, `${code}: ${status}`);
      assert.ok(typeof meaning === 'string' && meaning.length > 0, code);
    }
  });

  test("every code of SPEC.md's Errors table exists with SPEC.md's status", () => {
    const known = ERROR_CODES as Record<string, readonly [number, string]>;
    for (const [code, status] of Object.entries(SPEC_CODES)) {
      assert.ok(code in known, `${code} is missing from ERROR_CODES`);
      const actual = known[code][0];
      if (Array.isArray(status)) assert.ok(status.includes(actual), `${code}: ${actual} not in ${status.join('/')}`);
      else if (status !== null) assert.equal(actual, status, code);
    }
  });

  test('the codes used by the request pipeline exist with their status', () => {
    const expected: Record<string, number> = {
      NOT_FOUND: 404,
      METHOD_NOT_ALLOWED: 405,
      PAYLOAD_TOO_LARGE: 413,
      UNSUPPORTED_MEDIA_TYPE: 415,
      RATE_LIMITED: 429,
      INTERNAL_ERROR: 500,
      SANDBOX_LIMIT_REACHED: 402,
      IDEMPOTENCY_KEY_REQUIRED: 400,
      IDEMPOTENCY_KEY_INVALID: 400,
    };
    const known = ERROR_CODES as Record<string, readonly [number, string]>;
    for (const [code, status] of Object.entries(expected)) assert.equal(known[code]?.[0], status, code);
  });
});

describe('request pipeline errors', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({
      env: { SANDBOX_LIMIT: '2' },
      beforeReady: (app, c) => {
        registerBillableFixture(app, c);
        app.get('/v1/test-only/boom', async () => {
          throw new Error('secret SQL detail');
        });
      },
    });
  });
  after(() => t.close());

  test('an unknown route is 404 NOT_FOUND with {error, code, requestId}', async () => {
    const res = await t.app.inject({ url: '/v1/nope' });
    const body = assertError(res, 404, 'NOT_FOUND');
    assert.deepEqual(Object.keys(body).sort(), ['code', 'error', 'requestId']);
    assert.match(body.requestId, UUID);
    assertError(await t.app.inject({ method: 'POST', url: '/nope/at/all', headers: json, payload: '{}' }), 404, 'NOT_FOUND');
  });

  test('a known path under another method is 405 METHOD_NOT_ALLOWED with Allow', async () => {
    const a = await t.app.inject({ method: 'DELETE', url: '/v1/account', headers: bearer(t.customer.apiKey) });
    assertError(a, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(a.headers['allow'], 'GET, PATCH');

    const b = await t.app.inject({ method: 'GET', url: '/ops/customers', headers: ops });
    assertError(b, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(b.headers['allow'], 'POST');

    const c = await t.app.inject({ method: 'PUT', url: `/ops/customers/${t.customer.id}/api-keys/${t.customer.id}?x=1` });
    assertError(c, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(c.headers['allow'], 'DELETE');
  });

  test('malformed JSON is 400 INVALID_JSON', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/ops/customers', headers: { ...ops, ...json }, payload: '{"email": "a@b.co", ' });
    assertError(res, 400, 'INVALID_JSON');
    const form = await t.app.inject({
      method: 'POST',
      url: '/ops/customers',
      headers: { ...ops, 'content-type': 'application/x-www-form-urlencoded' },
      payload: '{"email": ',
    });
    assertError(form, 400, 'INVALID_JSON');
  });

  test('wrong field types are 400 VALIDATION_ERROR naming the field', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/ops/customers', headers: { ...ops, ...json }, payload: { email: 42, name: 'N' } });
    const body = assertError(res, 400, 'VALIDATION_ERROR');
    assert.ok(Array.isArray(body.details) && body.details.length >= 1, res.body);
    assert.deepEqual(
      body.details.map((d: { path: string }) => d.path),
      ['body.email'],
    );
    assert.equal(typeof body.details[0].message, 'string');

    const two = await t.app.inject({
      method: 'POST',
      url: '/ops/customers',
      headers: { ...ops, ...json },
      payload: { email: 'ok@example.com', name: 7, creditCents: 'lots' },
    });
    const twoBody = assertError(two, 400, 'VALIDATION_ERROR');
    assert.deepEqual(twoBody.details.map((d: { path: string }) => d.path).sort(), ['body.creditCents', 'body.name']);

    const missing = await t.app.inject({ method: 'POST', url: '/ops/customers', headers: { ...ops, ...json }, payload: {} });
    const missingBody = assertError(missing, 400, 'VALIDATION_ERROR');
    assert.deepEqual(missingBody.details.map((d: { path: string }) => d.path).sort(), ['body.email', 'body.name']);

    const param = await t.app.inject({ url: '/ops/customers/not-a-uuid', headers: ops });
    const paramBody = assertError(param, 400, 'VALIDATION_ERROR');
    assert.deepEqual(paramBody.details.map((d: { path: string }) => d.path), ['params.id']);
  });

  test('a body over 1 MiB is 413 PAYLOAD_TOO_LARGE', async () => {
    const big = JSON.stringify({ email: 'big@example.com', name: 'x'.repeat(1024 * 1024) });
    assertError(await t.app.inject({ method: 'POST', url: '/ops/customers', headers: { ...ops, ...json }, payload: big }), 413, 'PAYLOAD_TOO_LARGE');
    const fixture = await t.app.inject({
      method: 'POST',
      url: FIXTURE_PATH,
      headers: { ...bearer(t.customer.apiKey), ...json, 'idempotency-key': 'too-large' },
      payload: JSON.stringify({ title: 'y'.repeat(1024 * 1024 + 1) }),
    });
    assertError(fixture, 413, 'PAYLOAD_TOO_LARGE');
    // Nothing was charged for the refused request.
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) })).json().creditsCents, 500);
  });

  test('a body just under 1 MiB is read (the limit is not lower)', async () => {
    const name = 'x'.repeat(1024 * 1024 - 100);
    const res = await t.app.inject({ method: 'POST', url: '/ops/customers', headers: { ...ops, ...json }, payload: JSON.stringify({ email: 'near@example.com', name }) });
    // Past the body limit, the name fails its own max length: the body was parsed.
    const body = assertError(res, 400, 'VALIDATION_ERROR');
    assert.deepEqual(body.details.map((d: { path: string }) => d.path), ['body.name']);
  });

  test('an unsupported Content-Type is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    for (const type of ['application/xml', 'application/octet-stream']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/ops/customers',
        headers: { ...ops, 'content-type': type },
        payload: JSON.stringify({ email: 'p@example.com', name: 'P' }),
      });
      assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
    // A real form body (not curl's JSON-as-form) is refused too.
    const form = await t.app.inject({
      method: 'POST',
      url: '/ops/customers',
      headers: { ...ops, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'email=p%40example.com&name=P',
    });
    assertError(form, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('a text/plain body is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    for (const type of ['text/plain', 'text/plain; charset=utf-8']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/ops/customers',
        headers: { ...ops, 'content-type': type },
        payload: JSON.stringify({ email: 'p@example.com', name: 'P' }),
      });
      assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
  });

  test('every response carries x-request-id; a sane X-Request-Id is echoed', async () => {
    const ok = await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) });
    assert.equal(ok.statusCode, 200);
    assert.match(String(ok.headers['x-request-id']), UUID);
    const other = await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) });
    assert.notEqual(other.headers['x-request-id'], ok.headers['x-request-id']);

    const given = await t.app.inject({ url: '/v1/account', headers: { ...bearer(t.customer.apiKey), 'x-request-id': 'client-req.42:a_b-c' } });
    assert.equal(given.statusCode, 200);
    assert.equal(given.headers['x-request-id'], 'client-req.42:a_b-c');

    const givenOnError = await t.app.inject({ url: '/v1/account', headers: { 'x-request-id': 'trace-123' } });
    const body = assertError(givenOnError, 401, 'UNAUTHORIZED');
    assert.equal(body.requestId, 'trace-123');
    const notFound = await t.app.inject({ url: '/missing', headers: { 'x-request-id': 'trace-404' } });
    assert.equal(assertError(notFound, 404, 'NOT_FOUND').requestId, 'trace-404');

    // An unsafe or overlong id is replaced, not echoed.
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon']) {
      const res = await t.app.inject({ url: '/v1/account', headers: { ...bearer(t.customer.apiKey), 'x-request-id': bad } });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['x-request-id']), UUID, bad);
    }
  });

  test('an unexpected error is 500 INTERNAL_ERROR without its detail', async () => {
    const res = await t.app.inject({ url: '/v1/test-only/boom' });
    const body = assertError(res, 500, 'INTERNAL_ERROR');
    assert.deepEqual(Object.keys(body).sort(), ['code', 'error', 'requestId']);
    assert.ok(!res.body.toLowerCase().includes('secret'), res.body);
    assert.ok(!res.body.includes('SQL'), res.body);
    assert.ok(!res.body.includes('stack'), res.body);
  });

  test('a charge above the balance is 402 INSUFFICIENT_BALANCE with the price, balance and top-up URL', async () => {
    const poor = await t.createCustomer(5);
    const headers = { ...bearer(poor.apiKey), ...json, 'idempotency-key': 'poor-1' };
    const res = await t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers, payload: { title: 'too expensive' } });
    const body = assertError(res, 402, 'INSUFFICIENT_BALANCE');
    assert.equal(body.priceUsd, '0.10');
    assert.equal(body.priceMicros, 100000);
    assert.equal(body.balanceUsd, '0.05');
    assert.equal(body.balanceMicros, 50000);
    assert.equal(body.topUpUrl, 'http://signet.test/dashboard/billing');
    assert.equal(body.retryable, false);

    const acct = (await t.app.inject({ url: '/v1/account', headers: bearer(poor.apiKey) })).json();
    assert.equal(acct.balanceMicros, 50000);
    const usage = (await t.app.inject({ url: '/v1/account/usage', headers: bearer(poor.apiKey) })).json();
    assert.equal(usage.total, 1, 'only the opening credit');

    // A retry with the same key answers the same 402.
    const again = await t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers, payload: { title: 'too expensive' } });
    assert.equal(again.statusCode, 402);
    assert.equal(again.json().code, 'INSUFFICIENT_BALANCE');
    assert.equal(again.json().balanceMicros, 50000);
  });

  test('test-key calls are free up to SANDBOX_LIMIT, then 402 SANDBOX_LIMIT_REACHED', async () => {
    const c = await t.createCustomer(100);
    const call = (key: string) =>
      t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers: { ...bearer(c.testApiKey), ...json, 'idempotency-key': key }, payload: { title: key } });
    for (const key of ['sb-1', 'sb-2']) {
      const res = await call(key);
      assert.equal(res.statusCode, 201, res.body);
      assert.deepEqual(res.json(), { title: key, charged: false, ledgerEntryId: null });
    }
    const acct = (await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json();
    assert.equal(acct.creditsCents, 100);
    assert.equal(acct.sandboxUsed, 2);
    assert.equal(acct.sandboxLimit, 2);

    const third = await call('sb-3');
    const body = assertError(third, 402, 'SANDBOX_LIMIT_REACHED');
    assert.equal(body.retryable, false);
    const after = (await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json();
    assert.equal(after.sandboxUsed, 2);
    assert.equal(after.creditsCents, 100);

    // The live key is still charged normally.
    const live = await t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers: { ...bearer(c.apiKey), ...json, 'idempotency-key': 'live-1' }, payload: { title: 'live' } });
    assert.equal(live.statusCode, 201, live.body);
    assert.equal(live.json().charged, true);
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().creditsCents, 90);
  });

  test('X-Service-Test-Mode: true with a live key never debits and counts sandboxUsed', async () => {
    const c = await t.createCustomer(100);
    const call = (key: string) =>
      t.app.inject({
        method: 'POST',
        url: FIXTURE_PATH,
        headers: { ...bearer(c.apiKey), ...json, 'idempotency-key': key, 'x-service-test-mode': 'true' },
        payload: { title: key },
      });
    const first = await call('tm-1');
    assert.equal(first.statusCode, 201, first.body);
    assert.deepEqual(first.json(), { title: 'tm-1', charged: false, ledgerEntryId: null });
    let acct = (await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json();
    assert.equal(acct.creditsCents, 100);
    assert.equal(acct.sandboxUsed, 1);

    assert.equal((await call('tm-2')).statusCode, 201);
    assertError(await call('tm-3'), 402, 'SANDBOX_LIMIT_REACHED');
    acct = (await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json();
    assert.equal(acct.creditsCents, 100);
    assert.equal(acct.balanceMicros, 1_000_000);
    assert.equal(acct.sandboxUsed, 2);
    const usage = (await t.app.inject({ url: '/v1/account/usage', headers: bearer(c.apiKey) })).json();
    assert.equal(usage.total, 1, 'no debit rows, only the opening credit');
  });

  test('a billable call without Idempotency-Key is 400 IDEMPOTENCY_KEY_REQUIRED', async () => {
    const res = await t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers: { ...bearer(t.customer.apiKey), ...json }, payload: { title: 'no key' } });
    assertError(res, 400, 'IDEMPOTENCY_KEY_REQUIRED');
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) })).json().creditsCents, 500);
  });

  test('an Idempotency-Key over 255 characters is 400 IDEMPOTENCY_KEY_INVALID; 255 is accepted', async () => {
    const c = await t.createCustomer(100);
    const post = (key: string) =>
      t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers: { ...bearer(c.apiKey), ...json, 'idempotency-key': key }, payload: { title: 'k' } });
    assertError(await post('k'.repeat(256)), 400, 'IDEMPOTENCY_KEY_INVALID');
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().creditsCents, 100);
    const ok = await post('k'.repeat(255));
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal(ok.json().charged, true);
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().creditsCents, 90);
  });
});

describe('rate limiting', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { RATE_LIMIT_MAX: '3' } });
  });
  after(() => t.close());

  test('the 4th request of one customer in the window is 429 RATE_LIMITED; another customer is not limited', async () => {
    const other = await t.createCustomer(0);
    for (let i = 0; i < 3; i++) {
      const res = await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) });
      assert.equal(res.statusCode, 200, `request ${i + 1}: ${res.body}`);
      assert.equal(res.headers['ratelimit-limit'], '3');
      assert.equal(res.headers['ratelimit-remaining'], String(2 - i));
    }
    const limited = await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) });
    const body = assertError(limited, 429, 'RATE_LIMITED');
    assert.equal(limited.headers['ratelimit-limit'], '3');
    assert.equal(limited.headers['ratelimit-remaining'], '0');
    const retryAfter = Number(limited.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `retry-after ${limited.headers['retry-after']}`);
    assert.equal(typeof body.retryAfterSeconds, 'number');

    // The test key is the same customer and shares the budget.
    assertError(await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.testApiKey) }), 429, 'RATE_LIMITED');

    for (let i = 0; i < 3; i++) {
      const res = await t.app.inject({ url: '/v1/account', headers: bearer(other.apiKey) });
      assert.equal(res.statusCode, 200, `other customer request ${i + 1}: ${res.body}`);
      assert.equal(res.json().accountId, other.id);
    }
  });
});
