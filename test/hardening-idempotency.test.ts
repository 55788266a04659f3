import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql, type SQL } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { FIXTURE_PATH, registerBillableFixture } from './fixtures/billable-route.js';
import { OPS_TOKEN, S2S_KEY, bearer, createTestApp, type TestApp } from './harness.js';

async function scalar(t: TestApp, query: SQL): Promise<number> {
  const [row] = rowsOf<{ n: number }>(await t.container.db.execute(query));
  return Number(row.n);
}

const debitCount = (t: TestApp, customerId: string) =>
  scalar(t, sql`SELECT count(*)::int AS n FROM ledger_entries WHERE customer_id = ${customerId} AND direction = 'debit'`);

describe('idempotency hardening', () => {
  let t: TestApp;
  let charged = 0;
  before(async () => {
    t = await createTestApp({ beforeReady: (app, c) => registerBillableFixture(app, c, { afterCharge: async () => void charged++ }) });
  });
  after(() => t.close());

  const charge = (apiKey: string, key: string, title: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers: { ...bearer(apiKey), 'idempotency-key': key, ...headers }, payload: { title } });

  test('X-Service-Test-Mode is part of the fingerprint: a live retry of a test-mode request is 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const c = await t.createCustomer(500);
    const sandbox = await charge(c.apiKey, 'tm-1', 'tm', { 'x-service-test-mode': 'true' });
    assert.equal(sandbox.statusCode, 201, sandbox.body);
    assert.equal(sandbox.json().charged, false, 'the test-mode request was a free test send');

    const live = await charge(c.apiKey, 'tm-1', 'tm');
    assert.equal(live.statusCode, 422, live.body);
    assert.equal(live.json().code, 'IDEMPOTENCY_KEY_REUSED');
    const liveFalse = await charge(c.apiKey, 'tm-1', 'tm', { 'x-service-test-mode': 'false' });
    assert.equal(liveFalse.statusCode, 422, liveFalse.body);
    assert.equal(await debitCount(t, c.id), 0);

    // The same header value (in any case) is the same request and replays.
    const replay = await charge(c.apiKey, 'tm-1', 'tm', { 'x-service-test-mode': 'TRUE' });
    assert.equal(replay.statusCode, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body, sandbox.body);

    // And the other way round: a live request's key cannot be replayed as a test-mode one.
    const first = await charge(c.apiKey, 'tm-2', 'tm');
    assert.equal(first.json().charged, true);
    assert.equal((await charge(c.apiKey, 'tm-2', 'tm', { 'x-service-test-mode': 'true' })).statusCode, 422);
    // "false" and no header change nothing, so they are the same request.
    const same = await charge(c.apiKey, 'tm-2', 'tm', { 'x-service-test-mode': 'false' });
    assert.equal(same.headers['idempotent-replayed'], 'true');
    assert.equal(await debitCount(t, c.id), 1);
  });

  test('a failed second reservation insert answers 409 IDEMPOTENCY_KEY_IN_USE and the handler does not run', async () => {
    const c = await t.createCustomer(500);
    const repo = t.container.repos.idempotency;
    const { tryInsert, lockExisting } = repo;
    // The interleaving: our insert conflicts, the row is gone by the time we lock it (released by a 5xx
    // or purged), and another request inserts it again before our second insert.
    repo.tryInsert = (async () => undefined) as unknown as typeof tryInsert;
    repo.lockExisting = (async () => undefined) as unknown as typeof lockExisting;
    const before = charged;
    try {
      const res = await charge(c.apiKey, 'race-1', 'race');
      assert.equal(res.statusCode, 409, res.body);
      assert.equal(res.json().code, 'IDEMPOTENCY_KEY_IN_USE');
      assert.equal(res.headers['retry-after'], '1');
    } finally {
      repo.tryInsert = tryInsert;
      repo.lockExisting = lockExisting;
    }
    assert.equal(charged, before, 'the handler never ran without a reservation');
    assert.equal(await debitCount(t, c.id), 0);
  });

  test('a REST record stored before namespaces under a key that now moves (mcp:, ops:, rest:) still replays to its own request', async () => {
    const c = await t.createCustomer(500);
    for (const key of ['mcp:legacy', 'ops:legacy', 'rest:legacy']) {
      const first = await charge(c.apiKey, key, key);
      assert.equal(first.statusCode, 201, first.body);
      // Where the record sat before every source had its namespace: under the key as sent.
      await t.container.db.execute(sql`UPDATE idempotency_keys SET key = ${key} WHERE customer_id = ${c.id} AND key = ${`rest:${key}`}`);
      assert.equal(await scalar(t, sql`SELECT count(*)::int AS n FROM idempotency_keys WHERE customer_id = ${c.id} AND key = ${key}`), 1);
      const retry = await charge(c.apiKey, key, key);
      assert.equal(retry.statusCode, 201, retry.body);
      assert.equal(retry.headers['idempotent-replayed'], 'true', key);
      assert.equal(retry.body, first.body);
    }
    assert.equal(await debitCount(t, c.id), 3, 'no retry ran twice across the upgrade');
  });

  describe('operator credit grants', () => {
    const credit = (id: string, key: string | undefined, payload: object, headers: Record<string, string> = bearer(OPS_TOKEN)) =>
      t.app.inject({ method: 'POST', url: `/ops/customers/${id}/credits`, headers: { ...headers, ...(key === undefined ? {} : { 'idempotency-key': key }) }, payload });
    const creditCount = (id: string) =>
      scalar(t, sql`SELECT count(*)::int AS n FROM ledger_entries WHERE customer_id = ${id} AND direction = 'credit'`);

    test('require an Idempotency-Key', async () => {
      const c = await t.createCustomer(0);
      const res = await credit(c.id, undefined, { amountCents: 100, reason: 'grant' });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'IDEMPOTENCY_KEY_REQUIRED');
      assert.equal(await creditCount(c.id), 0);
    });

    test('a retry with the same key replays the grant; a different body is 422; nothing is credited twice', async () => {
      const c = await t.createCustomer(0);
      const first = await credit(c.id, 'grant-1', { amountCents: 100, reason: 'grant' });
      assert.equal(first.statusCode, 200, first.body);
      assert.deepEqual(first.json(), { creditsCents: 100 });
      const replay = await credit(c.id, 'grant-1', { amountCents: 100, reason: 'grant' });
      assert.equal(replay.statusCode, 200);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay.body, first.body);
      const other = await credit(c.id, 'grant-1', { amountCents: 500, reason: 'grant' });
      assert.equal(other.statusCode, 422, other.body);
      assert.equal(other.json().code, 'IDEMPOTENCY_KEY_REUSED');
      // The key names the grant to this customer only.
      const d = await t.createCustomer(0);
      assert.equal((await credit(d.id, 'grant-1', { amountCents: 100, reason: 'grant' })).headers['idempotent-replayed'], undefined);
      assert.equal(await creditCount(c.id), 1);
      assert.equal(await creditCount(d.id), 1);
      // The S2S credential is the same operator scope.
      const s2s = await credit(c.id, 'grant-1', { amountCents: 100, reason: 'grant' }, { 'x-s2s-key': S2S_KEY });
      assert.equal(s2s.headers['idempotent-replayed'], 'true');
    });

    test("an operator key does not collide with the customer's own keys", async () => {
      const c = await t.createCustomer(500);
      const own = await charge(c.apiKey, 'shared', 'own');
      assert.equal(own.statusCode, 201, own.body);
      const grant = await credit(c.id, 'shared', { amountCents: 100, reason: 'grant' });
      assert.equal(grant.statusCode, 200, grant.body);
      assert.equal(grant.headers['idempotent-replayed'], undefined);
      assert.equal((await charge(c.apiKey, 'shared', 'own')).headers['idempotent-replayed'], 'true');
      assert.equal(await creditCount(c.id), 2, 'the opening credit and the grant');
    });

    test("a customer's key ops:<k> and an operator's key <k> for that customer are two records, in either order", async () => {
      const c = await t.createCustomer(500);
      const own = await charge(c.apiKey, 'ops:g-1', 'own');
      assert.equal(own.statusCode, 201, own.body);
      const grant = await credit(c.id, 'g-1', { amountCents: 100, reason: 'grant' });
      assert.equal(grant.statusCode, 200, grant.body);
      assert.equal(grant.headers['idempotent-replayed'], undefined);

      const grantFirst = await credit(c.id, 'g-2', { amountCents: 100, reason: 'grant' });
      assert.equal(grantFirst.statusCode, 200, grantFirst.body);
      const ownSecond = await charge(c.apiKey, 'ops:g-2', 'own');
      assert.equal(ownSecond.statusCode, 201, ownSecond.body);
      assert.equal(ownSecond.headers['idempotent-replayed'], undefined);

      assert.equal((await charge(c.apiKey, 'ops:g-2', 'own')).headers['idempotent-replayed'], 'true');
      assert.equal((await credit(c.id, 'g-2', { amountCents: 100, reason: 'grant' })).headers['idempotent-replayed'], 'true');
      assert.equal(await creditCount(c.id), 3, 'the opening credit and two grants');
      assert.equal(await debitCount(t, c.id), 2);
    });

    test('an unknown customer is 404 CUSTOMER_NOT_FOUND, not a failed reservation', async () => {
      const res = await credit('00000000-0000-4000-8000-000000000000', 'grant-x', { amountCents: 100, reason: 'grant' });
      assert.equal(res.statusCode, 404, res.body);
      assert.equal(res.json().code, 'CUSTOMER_NOT_FOUND');
    });
  });
});
