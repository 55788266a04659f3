import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { apiKeys } from '../src/db/schema/index.js';
import { bearer, createTestApp, OPS_TOKEN, S2S_KEY, type TestApp } from './harness.js';

let t: TestApp;
before(async () => {
  t = await createTestApp({ creditCents: 500 });
});
after(() => t.close());

const ops = { authorization: `Bearer ${OPS_TOKEN}` };
const json = { 'content-type': 'application/json' };
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const hex32 = () => randomBytes(16).toString('hex');

async function account(headers: Record<string, string>) {
  return t.app.inject({ method: 'GET', url: '/v1/account', headers });
}

function assertError(res: { statusCode: number; json(): any; headers: Record<string, unknown> }, status: number, code: string) {
  assert.equal(res.statusCode, status, JSON.stringify(res.json()));
  const body = res.json();
  assert.equal(body.code, code);
  assert.equal(typeof body.error, 'string');
  assert.ok(body.error.length > 0);
  assert.equal(body.requestId, res.headers['x-request-id']);
}

describe('customer authentication', () => {
  test('no Authorization header is 401 UNAUTHORIZED', async () => {
    assertError(await account({}), 401, 'UNAUTHORIZED');
  });

  test('a well-formed but unknown key is 401 UNAUTHORIZED', async () => {
    assertError(await account(bearer(`svc_live_${hex32()}`)), 401, 'UNAUTHORIZED');
    assertError(await account(bearer(`svc_test_${hex32()}`)), 401, 'UNAUTHORIZED');
  });

  test('the live key and the bearer scheme in any case are accepted', async () => {
    const a = await account(bearer(t.customer.apiKey));
    assert.equal(a.statusCode, 200, a.body);
    const b = await account({ authorization: `bearer ${t.customer.apiKey}` });
    assert.equal(b.statusCode, 200, b.body);
    assert.equal(b.json().accountId, t.customer.id);
  });

  // What src/http/auth.ts answers per malformed credential: a value that is not "Bearer <one token>"
  // fails in bearerOf; an svc_ value off the pattern fails in apiKeyResolver; any other bearer is not a
  // recognised credential. All of them are TOKEN_INVALID, not UNAUTHORIZED.
  const malformed: [string, string][] = [
    ['svc_live_ with a short tail', 'Bearer svc_live_short'],
    ['svc_live_ with 32 uppercase hex', `Bearer svc_live_${hex32().toUpperCase()}`],
    ['svc_test_ with 31 hex', `Bearer svc_test_${hex32().slice(1)}`],
    ['svc_live_ with 33 hex', `Bearer svc_live_${hex32()}a`],
    ['an unknown svc_ mode', `Bearer svc_prod_${hex32()}`],
    ['the Basic scheme', 'Basic abc'],
    ['Bearer without a credential', 'Bearer'],
    ['a JWT-like bearer that is not a key', 'Bearer abc.def.ghi'],
    ['a bare value without a scheme', 'abc.def.ghi'],
  ];
  for (const [name, header] of malformed) {
    test(`malformed credential (${name}) is 401 TOKEN_INVALID`, async () => {
      assertError(await account({ authorization: header }), 401, 'TOKEN_INVALID');
    });
  }

  test('a valid key with extra text after it is TOKEN_INVALID, not accepted', async () => {
    assertError(await account({ authorization: `Bearer ${t.customer.apiKey} extra` }), 401, 'TOKEN_INVALID');
  });

  test('test and live keys resolve to the same account with their own mode', async () => {
    const live = await account(bearer(t.customer.apiKey));
    const testRes = await account(bearer(t.customer.testApiKey));
    assert.equal(live.statusCode, 200);
    assert.equal(testRes.statusCode, 200);
    const l = live.json();
    const s = testRes.json();
    assert.equal(l.accountId, t.customer.id);
    assert.equal(s.accountId, t.customer.id);
    assert.equal(l.mode, 'live');
    assert.equal(s.mode, 'test');
    assert.equal(l.apiKeyPrefix, t.customer.apiKey.slice(0, 17));
    assert.equal(s.apiKeyPrefix, t.customer.testApiKey.slice(0, 17));
    assert.match(l.apiKeyPrefix, /^svc_live_[0-9a-f]{8}$/);
    // Same customer record, same balance.
    assert.equal(l.creditsCents, 500);
    assert.equal(s.creditsCents, 500);
    assert.equal(l.balanceMicros, 5_000_000);
    assert.equal(l.creditsFormatted, '$5.00');
  });

  test('a test key sees an empty usage history; the live key sees the opening credit', async () => {
    const testUsage = await t.app.inject({ url: '/v1/account/usage', headers: bearer(t.customer.testApiKey) });
    assert.equal(testUsage.statusCode, 200, testUsage.body);
    assert.deepEqual(testUsage.json(), { data: [], total: 0, limit: 20, offset: 0 });

    const liveUsage = await t.app.inject({ url: '/v1/account/usage', headers: bearer(t.customer.apiKey) });
    assert.equal(liveUsage.statusCode, 200, liveUsage.body);
    const body = liveUsage.json();
    assert.equal(body.total, 1);
    assert.equal(body.data.length, 1);
    const [entry] = body.data;
    assert.equal(entry.direction, 'credit');
    assert.equal(entry.amountCents, 500);
    assert.equal(entry.amountMicros, 5_000_000);
    assert.equal(entry.amountFormatted, '$5.00');
    assert.equal(entry.description, 'Opening credit');
    assert.equal(entry.envelopeId, null);
  });

  test("another customer's key sees its own account only", async () => {
    const other = await t.createCustomer(123);
    assert.notEqual(other.id, t.customer.id);
    const res = await account(bearer(other.apiKey));
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().accountId, other.id);
    assert.equal(res.json().creditsCents, 123);
    const usage = (await t.app.inject({ url: '/v1/account/usage', headers: bearer(other.apiKey) })).json();
    assert.equal(usage.total, 1);
    assert.equal(usage.data[0].amountCents, 123);
    // And the first customer's view is unchanged.
    assert.equal((await account(bearer(t.customer.apiKey))).json().creditsCents, 500);
  });

  test('X-S2S-Key is refused on customer routes, alone or with a valid key', async () => {
    assertError(await account({ 'x-s2s-key': S2S_KEY }), 401, 'UNAUTHORIZED');
    assertError(await account({ 'x-s2s-key': S2S_KEY, ...bearer(t.customer.apiKey) }), 401, 'UNAUTHORIZED');
  });

  test('a key revoked through the operator API stops working; the other keys keep working', async () => {
    const c = await t.createCustomer(0);
    assert.equal((await account(bearer(c.apiKey))).statusCode, 200);

    const detail = await t.app.inject({ url: `/ops/customers/${c.id}`, headers: ops });
    assert.equal(detail.statusCode, 200, detail.body);
    const keys = detail.json().apiKeys as { keyId: string; prefix: string; mode: string; revokedAt: string | null }[];
    assert.equal(keys.length, 2);
    const live = keys.find((k) => k.prefix === c.apiKey.slice(0, 17));
    assert.ok(live, 'the live key is listed by its prefix');
    assert.equal(live.mode, 'live');
    assert.equal(live.revokedAt, null);

    const del = await t.app.inject({ method: 'DELETE', url: `/ops/customers/${c.id}/api-keys/${live.keyId}`, headers: ops });
    assert.equal(del.statusCode, 200, del.body);
    const revoked = del.json();
    assert.equal(revoked.keyId, live.keyId);
    assert.equal(revoked.prefix, live.prefix);
    assert.ok(!Number.isNaN(Date.parse(revoked.revokedAt)));

    assertError(await account(bearer(c.apiKey)), 401, 'UNAUTHORIZED');
    const testStill = await account(bearer(c.testApiKey));
    assert.equal(testStill.statusCode, 200);
    assert.equal(testStill.json().accountId, c.id);

    // Revoking again keeps the first revocation time.
    const again = await t.app.inject({ method: 'DELETE', url: `/ops/customers/${c.id}/api-keys/${live.keyId}`, headers: ops });
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().revokedAt, revoked.revokedAt);

    const after = (await t.app.inject({ url: `/ops/customers/${c.id}`, headers: ops })).json();
    assert.equal(after.apiKeys.find((k: { keyId: string }) => k.keyId === live.keyId).revokedAt, revoked.revokedAt);

    // A key id of another customer is not found under this one.
    const otherKeys = (await t.app.inject({ url: `/ops/customers/${t.customer.id}`, headers: ops })).json().apiKeys;
    const wrong = await t.app.inject({ method: 'DELETE', url: `/ops/customers/${c.id}/api-keys/${otherKeys[0].keyId}`, headers: ops });
    assertError(wrong, 404, 'API_KEY_NOT_FOUND');
    assert.equal((await account(bearer(t.customer.apiKey))).statusCode, 200);
  });
});

describe('operator authentication', () => {
  const url = () => `/ops/customers/${t.customer.id}`;

  test('no credential is 401 UNAUTHORIZED', async () => {
    assertError(await t.app.inject({ url: url() }), 401, 'UNAUTHORIZED');
  });

  test('a wrong operator token is 401 UNAUTHORIZED', async () => {
    assertError(await t.app.inject({ url: url(), headers: bearer('not-the-ops-token-0123456789') }), 401, 'UNAUTHORIZED');
    assertError(await t.app.inject({ url: url(), headers: bearer(OPS_TOKEN + 'x') }), 401, 'UNAUTHORIZED');
  });

  test('OPS_TOKEN is accepted', async () => {
    const res = await t.app.inject({ url: url(), headers: ops });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.customerId, t.customer.id);
    assert.equal(body.creditsCents, 500);
    assert.equal(body.apiKeys.length, 2);
    assert.deepEqual(body.apiKeys.map((k: { mode: string }) => k.mode).sort(), ['live', 'test']);
  });

  test('X-S2S-Key with S2S_KEY is accepted; a wrong one is 401 even with a valid ops token', async () => {
    const ok = await t.app.inject({ url: url(), headers: { 'x-s2s-key': S2S_KEY } });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().customerId, t.customer.id);
    assertError(await t.app.inject({ url: url(), headers: { 'x-s2s-key': 's2s-key-wrong-0123456789' } }), 401, 'UNAUTHORIZED');
    assertError(await t.app.inject({ url: url(), headers: { 'x-s2s-key': 's2s-key-wrong-0123456789', ...ops } }), 401, 'UNAUTHORIZED');
  });

  test('a customer API key is not an operator credential', async () => {
    assertError(await t.app.inject({ url: url(), headers: bearer(t.customer.apiKey) }), 401, 'UNAUTHORIZED');
    assertError(await t.app.inject({ url: url(), headers: bearer(t.customer.testApiKey) }), 401, 'UNAUTHORIZED');
    assertError(
      await t.app.inject({ method: 'POST', url: '/ops/customers', headers: { ...bearer(t.customer.apiKey), ...json }, payload: { email: 'x@example.com', name: 'X' } }),
      401,
      'UNAUTHORIZED',
    );
    assertError(await t.app.inject({ url: '/ops/audit', headers: bearer(t.customer.apiKey) }), 401, 'UNAUTHORIZED');
  });
});

describe('POST /ops/customers', () => {
  test('creates a customer with a live and a test key that work; only their hashes are stored', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/ops/customers',
      headers: { ...ops, ...json },
      payload: { email: 'new@example.com', name: 'New Customer', creditCents: 250 },
    });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['apiKey', 'customerId', 'testApiKey']);
    assert.match(body.customerId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.match(body.apiKey, /^svc_live_[0-9a-f]{32}$/);
    assert.match(body.testApiKey, /^svc_test_[0-9a-f]{32}$/);

    const live = await account(bearer(body.apiKey));
    assert.equal(live.statusCode, 200, live.body);
    assert.equal(live.json().accountId, body.customerId);
    assert.equal(live.json().email, 'new@example.com');
    assert.equal(live.json().name, 'New Customer');
    assert.equal(live.json().creditsCents, 250);
    assert.equal(live.json().mode, 'live');
    const testRes = await account(bearer(body.testApiKey));
    assert.equal(testRes.statusCode, 200, testRes.body);
    assert.equal(testRes.json().accountId, body.customerId);
    assert.equal(testRes.json().mode, 'test');

    const rows = await t.container.db.select().from(apiKeys).where(eq(apiKeys.customerId, body.customerId));
    assert.equal(rows.length, 2);
    const dump = JSON.stringify(rows);
    for (const key of [body.apiKey, body.testApiKey]) {
      assert.ok(!dump.includes(key), 'the raw key is not stored');
      assert.ok(!dump.includes(key.slice(9)), 'the secret part of the key is not stored');
      const row = rows.find((r) => r.keyHash === sha256(key));
      assert.ok(row, 'the SHA-256 of the key is stored');
      assert.equal(row.prefix, key.slice(0, 17));
      assert.equal(row.mode, key.startsWith('svc_live_') ? 'live' : 'test');
      assert.equal(row.revokedAt, null);
    }
  });

  test('accepts a JSON body sent as application/x-www-form-urlencoded (curl -d)', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/ops/customers',
      headers: { ...ops, 'content-type': 'application/x-www-form-urlencoded' },
      payload: JSON.stringify({ email: 'curl@example.com', name: 'Curl User' }),
    });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.match(body.apiKey, /^svc_live_[0-9a-f]{32}$/);
    const acct = await account(bearer(body.apiKey));
    assert.equal(acct.statusCode, 200);
    assert.equal(acct.json().email, 'curl@example.com');
    assert.equal(acct.json().creditsCents, 0);
  });

  test('customer creation and credits leave audit rows at GET /ops/audit', async () => {
    const created = await t.app.inject({
      method: 'POST',
      url: '/ops/customers',
      headers: { ...ops, ...json },
      payload: { email: 'audited@example.com', name: 'Audited', creditCents: 100 },
    });
    assert.equal(created.statusCode, 201, created.body);
    const { customerId } = created.json();

    const credit = await t.app.inject({
      method: 'POST',
      url: `/ops/customers/${customerId}/credits`,
      headers: { 'x-s2s-key': S2S_KEY, 'idempotency-key': randomBytes(8).toString('hex'), ...json },
      payload: { amountCents: 700, reason: 'goodwill' },
    });
    assert.equal(credit.statusCode, 200, credit.body);
    assert.deepEqual(credit.json(), { creditsCents: 800 });

    const audit = await t.app.inject({ url: `/ops/audit?customerId=${customerId}`, headers: ops });
    assert.equal(audit.statusCode, 200, audit.body);
    const body = audit.json();
    assert.equal(body.total, 2);
    assert.equal(body.limit, 20);
    assert.equal(body.offset, 0);
    const [creditRow, createRow] = body.data;
    assert.equal(creditRow.action, 'credits.add');
    assert.equal(creditRow.customerId, customerId);
    assert.equal(creditRow.actorType, 's2s');
    assert.equal(creditRow.resourceType, 'ledger_entry');
    assert.equal(creditRow.requestId, credit.headers['x-request-id']);
    assert.deepEqual(creditRow.metadata, { amountCents: 700, reason: 'goodwill' });

    assert.equal(createRow.action, 'customer.create');
    assert.equal(createRow.customerId, customerId);
    assert.equal(createRow.actorType, 'operator');
    assert.equal(createRow.resourceType, 'customer');
    assert.equal(createRow.resourceId, customerId);
    assert.equal(createRow.requestId, created.headers['x-request-id']);
    assert.deepEqual(createRow.metadata, { creditCents: 100 });
    // The audit row never carries a key.
    assert.ok(!JSON.stringify(body).includes('svc_'));
  });
});
