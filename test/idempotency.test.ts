import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql, type SQL } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { rowsOf } from '../src/db/client.js';
import { MAX_IDEMPOTENCY_TTL_HOURS } from '../src/config-durations.js';
import { idempotencyPurgeTask } from '../src/http/idempotency.js';
import { FIXTURE_PATH, registerBillableFixture } from './fixtures/billable-route.js';
import { bearer, createTestApp, type TestApp } from './harness.js';

type Body = { title: string; fail?: 'none' | 'client' | 'server'; pauseMs?: number };

const PRICE_MICROS = 100_000;

function charge(t: TestApp, apiKey: string, idempotencyKey: string | undefined, body: Body, headers: Record<string, string> = {}) {
  return t.app.inject({
    method: 'POST',
    url: FIXTURE_PATH,
    headers: { ...bearer(apiKey), ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }), ...headers },
    payload: body,
  });
}

async function scalar(t: TestApp, query: SQL): Promise<number> {
  const [row] = rowsOf<{ n: number }>(await t.container.db.execute(query));
  return Number(row.n);
}

const debitCount = (t: TestApp, customerId: string) =>
  scalar(t, sql`SELECT count(*)::int AS n FROM ledger_entries WHERE customer_id = ${customerId} AND direction = 'debit'`);

const fixtureAuditCount = (t: TestApp, customerId: string) =>
  scalar(t, sql`SELECT count(*)::int AS n FROM audit_log WHERE customer_id = ${customerId} AND action = 'fixture.create'`);

const idempotencyRowCount = (t: TestApp, customerId: string, key: string) =>
  scalar(t, sql`SELECT count(*)::int AS n FROM idempotency_keys WHERE customer_id = ${customerId} AND key = ${key}`);

async function balanceMicros(t: TestApp, apiKey: string): Promise<number> {
  const res = await t.app.inject({ url: '/v1/account', headers: bearer(apiKey) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().balanceMicros;
}

async function usage(t: TestApp, apiKey: string) {
  const res = await t.app.inject({ url: '/v1/account/usage?limit=100', headers: bearer(apiKey) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { total: number; data: { id: string; direction: string; amountMicros: number; envelopeTitle: string | null }[] };
}

function assertFresh201(res: LightMyRequestResponse, title: string, charged = true) {
  assert.equal(res.statusCode, 201, res.body);
  assert.equal(res.headers['idempotent-replayed'], undefined);
  const body = res.json();
  assert.equal(body.title, title);
  assert.equal(body.charged, charged);
  if (charged) assert.match(body.ledgerEntryId, /^[0-9a-f-]{36}$/);
  else assert.equal(body.ledgerEntryId, null);
}

function assertReplayOf(replay: LightMyRequestResponse, original: LightMyRequestResponse) {
  assert.equal(replay.statusCode, original.statusCode);
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.equal(replay.headers['content-type'], original.headers['content-type']);
  assert.equal(replay.body, original.body, 'a replay returns the stored body byte for byte');
}

describe('idempotency (default lease)', () => {
  // One app; every test uses its own customer, so the tests do not see each other's records.
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ beforeReady: (app, c) => registerBillableFixture(app, c) });
  });
  after(() => t.close());

  test('a billable route without Idempotency-Key answers 400 IDEMPOTENCY_KEY_REQUIRED and charges nothing', async () => {
    const c = await t.createCustomer(500);
    const res = await charge(t, c.apiKey, undefined, { title: 'no-key' });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'IDEMPOTENCY_KEY_REQUIRED');
    const tooLong = await charge(t, c.apiKey, 'k'.repeat(256), { title: 'long-key' });
    assert.equal(tooLong.statusCode, 400);
    assert.equal(tooLong.json().code, 'IDEMPOTENCY_KEY_INVALID');
    const longest = await charge(t, c.apiKey, 'k'.repeat(255), { title: 'longest-key' });
    assertFresh201(longest, 'longest-key');
    assert.equal(await debitCount(t, c.id), 1);
    assert.equal(await balanceMicros(t, c.apiKey), 5_000_000 - PRICE_MICROS);
  });

  test('a replay returns the identical bytes and status with Idempotent-Replayed: true, and charges once', async () => {
    const c = await t.createCustomer(500);
    const first = await charge(t, c.apiKey, 'replay-1', { title: 'replayed' });
    assertFresh201(first, 'replayed');
    assert.match(String(first.headers['content-type']), /^application\/json/);

    const second = await charge(t, c.apiKey, 'replay-1', { title: 'replayed' });
    assertReplayOf(second, first);
    const third = await charge(t, c.apiKey, 'replay-1', { title: 'replayed' });
    assertReplayOf(third, first);

    assert.equal(await debitCount(t, c.id), 1);
    assert.equal(await fixtureAuditCount(t, c.id), 1);
    assert.equal(await balanceMicros(t, c.apiKey), 5_000_000 - PRICE_MICROS);
    const u = await usage(t, c.apiKey);
    const debits = u.data.filter((e) => e.direction === 'debit');
    assert.equal(debits.length, 1);
    assert.equal(debits[0].id, first.json().ledgerEntryId);
    assert.equal(debits[0].amountMicros, PRICE_MICROS);
    assert.equal(debits[0].envelopeTitle, 'replayed');
  });

  test('the same key with a different body answers 422 IDEMPOTENCY_KEY_REUSED and charges nothing more', async () => {
    const c = await t.createCustomer(500);
    const first = await charge(t, c.apiKey, 'reuse-1', { title: 'one' });
    assertFresh201(first, 'one');
    const other = await charge(t, c.apiKey, 'reuse-1', { title: 'two' });
    assert.equal(other.statusCode, 422);
    assert.equal(other.json().code, 'IDEMPOTENCY_KEY_REUSED');
    assert.equal(other.headers['idempotent-replayed'], undefined);
    // The stored answer is untouched by the rejected request.
    assertReplayOf(await charge(t, c.apiKey, 'reuse-1', { title: 'one' }), first);
    assert.equal(await debitCount(t, c.id), 1);
    assert.equal(await fixtureAuditCount(t, c.id), 1);
  });

  test('a 4xx answer is stored and replayed identically, with no charge', async () => {
    const c = await t.createCustomer(500);
    const first = await charge(t, c.apiKey, 'client-1', { title: 'bad', fail: 'client' });
    assert.equal(first.statusCode, 400, first.body);
    const body = first.json();
    assert.equal(body.code, 'VALIDATION_ERROR');
    assert.deepEqual(body.details, [{ path: 'body.fail', message: 'client' }]);
    assert.equal(typeof body.requestId, 'string');

    const second = await charge(t, c.apiKey, 'client-1', { title: 'bad', fail: 'client' });
    assertReplayOf(second, first);
    // The replayed body still carries the first request's id: it was not run again.
    assert.equal(second.json().requestId, body.requestId);
    assert.notEqual(second.headers['x-request-id'], body.requestId);

    assert.equal(await debitCount(t, c.id), 0);
    assert.equal(await fixtureAuditCount(t, c.id), 0);
    assert.equal(await balanceMicros(t, c.apiKey), 5_000_000);
  });

  test('a 5xx answer is not stored: the retry with the same key runs again', async () => {
    const c = await t.createCustomer(500);
    const first = await charge(t, c.apiKey, 'server-1', { title: 'boom', fail: 'server' });
    assert.equal(first.statusCode, 500, first.body);
    assert.equal(first.json().code, 'INTERNAL_ERROR');
    assert.equal(await idempotencyRowCount(t, c.id, 'server-1'), 0, 'the reservation is released');

    const second = await charge(t, c.apiKey, 'server-1', { title: 'boom', fail: 'server' });
    assert.equal(second.statusCode, 500, second.body);
    assert.equal(second.json().code, 'INTERNAL_ERROR');
    assert.equal(second.headers['idempotent-replayed'], undefined);
    assert.notEqual(second.json().requestId, first.json().requestId, 'the second attempt ran, it was not replayed');

    assert.equal(await debitCount(t, c.id), 0);
    assert.equal(await fixtureAuditCount(t, c.id), 0);
    assert.equal(await balanceMicros(t, c.apiKey), 5_000_000);
    // Nothing was recorded under the key, so it is free for a corrected request.
    assertFresh201(await charge(t, c.apiKey, 'server-1', { title: 'fixed' }), 'fixed');
    assert.equal(await debitCount(t, c.id), 1);
  });

  test('50 concurrent requests with one key: one runs, the rest get 409 or its replay; one debit, one audit row', async () => {
    const c = await t.createCustomer(500);
    const body = { title: 'herd', pauseMs: 200 };
    const results = await Promise.all(Array.from({ length: 50 }, () => charge(t, c.apiKey, 'herd-1', body)));

    const fresh = results.filter((r) => r.statusCode === 201 && r.headers['idempotent-replayed'] === undefined);
    assert.equal(fresh.length, 1, `statuses: ${results.map((r) => r.statusCode).join(',')}`);
    assertFresh201(fresh[0], 'herd');
    for (const r of results) {
      if (r === fresh[0]) continue;
      if (r.statusCode === 409) {
        assert.equal(r.json().code, 'IDEMPOTENCY_KEY_IN_USE');
        assert.equal(r.headers['retry-after'], '1');
      } else {
        assertReplayOf(r, fresh[0]);
      }
    }
    assert.equal(await debitCount(t, c.id), 1);
    assert.equal(await fixtureAuditCount(t, c.id), 1);
    assert.equal(await balanceMicros(t, c.apiKey), 5_000_000 - PRICE_MICROS);
    // After the dust settles every retry is a replay.
    assertReplayOf(await charge(t, c.apiKey, 'herd-1', body), fresh[0]);
  });

  test('two customers using the same key do not collide', async () => {
    const a = await t.createCustomer(500);
    const b = await t.createCustomer(500);
    const ra = await charge(t, a.apiKey, 'shared-key', { title: 'same' });
    const rb = await charge(t, b.apiKey, 'shared-key', { title: 'same' });
    assertFresh201(ra, 'same');
    assertFresh201(rb, 'same');
    assert.notEqual(ra.json().ledgerEntryId, rb.json().ledgerEntryId);
    // A different body under the same key is fine for another customer.
    const c = await t.createCustomer(500);
    assertFresh201(await charge(t, c.apiKey, 'shared-key', { title: 'different' }), 'different');

    for (const who of [a, b, c]) {
      assert.equal(await debitCount(t, who.id), 1);
      assert.equal(await fixtureAuditCount(t, who.id), 1);
      assert.equal(await balanceMicros(t, who.apiKey), 5_000_000 - PRICE_MICROS);
    }
    assertReplayOf(await charge(t, a.apiKey, 'shared-key', { title: 'same' }), ra);
    assertReplayOf(await charge(t, b.apiKey, 'shared-key', { title: 'same' }), rb);
  });

  test("a customer's test key and live key are separate idempotency scopes", async () => {
    const c = await t.createCustomer(500);
    const live = await charge(t, c.apiKey, 'mode-key', { title: 'moded' });
    assertFresh201(live, 'moded', true);
    const sandbox = await charge(t, c.testApiKey, 'mode-key', { title: 'moded' });
    assertFresh201(sandbox, 'moded', false);

    assertReplayOf(await charge(t, c.apiKey, 'mode-key', { title: 'moded' }), live);
    assertReplayOf(await charge(t, c.testApiKey, 'mode-key', { title: 'moded' }), sandbox);

    assert.equal(await debitCount(t, c.id), 1);
    assert.equal(await fixtureAuditCount(t, c.id), 2);
    const acct = await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) });
    assert.equal(acct.json().balanceMicros, 5_000_000 - PRICE_MICROS);
    assert.equal(acct.json().sandboxUsed, 1);
  });

  test('a live reservation answers 409 IDEMPOTENCY_KEY_IN_USE; once its lease lapses a retry takes over', async () => {
    const c = await t.createCustomer(500);
    const body: Body = { title: 'held', fail: 'client' };
    const first = await charge(t, c.apiKey, 'held-1', body);
    assert.equal(first.statusCode, 400, first.body);
    // Turn the stored record back into a reservation held by a request that is still running...
    await t.container.db.execute(sql`UPDATE idempotency_keys
      SET state = 'in_progress', lease_token = gen_random_uuid(), lease_expires_at = now() + interval '1 hour',
          response_status = NULL, response_headers = NULL, response_body = NULL
      WHERE customer_id = ${c.id} AND key = 'held-1'`);
    const busy = await charge(t, c.apiKey, 'held-1', body);
    assert.equal(busy.statusCode, 409, busy.body);
    assert.equal(busy.json().code, 'IDEMPOTENCY_KEY_IN_USE');
    assert.equal(busy.headers['retry-after'], '1');
    // ...and still checked against its fingerprint.
    const reused = await charge(t, c.apiKey, 'held-1', { title: 'other' });
    assert.equal(reused.statusCode, 422);
    assert.equal(reused.json().code, 'IDEMPOTENCY_KEY_REUSED');

    // ...then by one that died: its lease lapsed, so the retry runs again and stores its own answer.
    await t.container.db.execute(sql`UPDATE idempotency_keys SET lease_expires_at = now() - interval '1 second'
      WHERE customer_id = ${c.id} AND key = 'held-1'`);
    const retried = await charge(t, c.apiKey, 'held-1', body);
    assert.equal(retried.statusCode, 400, retried.body);
    assert.equal(retried.json().code, 'VALIDATION_ERROR');
    assert.equal(retried.headers['idempotent-replayed'], undefined);
    assert.notEqual(retried.json().requestId, first.json().requestId);
    assertReplayOf(await charge(t, c.apiKey, 'held-1', body), retried);
    assert.equal(await debitCount(t, c.id), 0);
  });

  test('the periodic purge deletes records past their TTL, and their keys can be used again', async () => {
    const c = await t.createCustomer(500);
    const kept = await charge(t, c.apiKey, 'purge-kept', { title: 'kept' });
    const old = await charge(t, c.apiKey, 'purge-old', { title: 'old' });
    const lapsed = await charge(t, c.apiKey, 'purge-lapsed', { title: 'lapsed' });
    for (const [r, title] of [[kept, 'kept'], [old, 'old'], [lapsed, 'lapsed']] as const) assertFresh201(r, title);
    assert.equal(await debitCount(t, c.id), 3);

    // Age two records past IDEMPOTENCY_TTL_HOURS (24 h by default), as if a day and an hour went by.
    const ttlHours = t.config.idempotencyTtlHours;
    await t.container.db.execute(sql`UPDATE idempotency_keys
      SET created_at = created_at - make_interval(hours => ${ttlHours + 1}),
          expires_at = expires_at - make_interval(hours => ${ttlHours + 1}),
          lease_expires_at = lease_expires_at - make_interval(hours => ${ttlHours + 1})
      WHERE customer_id = ${c.id} AND key IN ('purge-old', 'purge-lapsed')`);

    // Past its TTL but not purged yet, a record no longer answers: the key is free.
    const beforePurge = await charge(t, c.apiKey, 'purge-lapsed', { title: 'lapsed' });
    assertFresh201(beforePurge, 'lapsed');
    assert.notEqual(beforePurge.json().ledgerEntryId, lapsed.json().ledgerEntryId);
    assert.equal(await debitCount(t, c.id), 4);

    const task = idempotencyPurgeTask(t.container.repos.idempotency);
    assert.ok(task);
    await t.container.db.transaction((tx) => task.run(tx));

    assert.equal(await idempotencyRowCount(t, c.id, 'purge-old'), 0, 'the expired record is deleted');
    assert.equal(await idempotencyRowCount(t, c.id, 'purge-kept'), 1, 'a record within its TTL stays');
    assert.equal(await idempotencyRowCount(t, c.id, 'purge-lapsed'), 1, 'the renewed record stays');

    assertReplayOf(await charge(t, c.apiKey, 'purge-kept', { title: 'kept' }), kept);
    assertReplayOf(await charge(t, c.apiKey, 'purge-lapsed', { title: 'lapsed' }), beforePurge);
    const again = await charge(t, c.apiKey, 'purge-old', { title: 'old' });
    assertFresh201(again, 'old');
    assert.notEqual(again.json().ledgerEntryId, old.json().ledgerEntryId);
    assert.equal(await debitCount(t, c.id), 5);
    assertReplayOf(await charge(t, c.apiKey, 'purge-old', { title: 'old' }), again);
  });
});

describe('idempotency (short lease)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { IDEMPOTENCY_LEASE_MS: '300' }, beforeReady: (app, c) => registerBillableFixture(app, c) });
  });
  after(() => t.close());

  test('a request that overruns its lease is taken over by a retry and rolls back: exactly one debit', async () => {
    const c = await t.createCustomer(500);
    const body = { title: 'slow', pauseMs: 1500 };
    const slow = charge(t, c.apiKey, 'lease-1', body);
    await new Promise((r) => setTimeout(r, 400));
    if (t.container.database.kind === 'postgres') {
      // Send the retry only once the first request's 300 ms lease has lapsed in the database's own clock,
      // so a slow machine cannot turn this into a plain 409 for the retry.
      const lapsed = sql`SELECT count(*)::int AS n FROM idempotency_keys
        WHERE customer_id = ${c.id} AND key = 'lease-1' AND state = 'in_progress' AND lease_expires_at < now()`;
      for (let i = 0; i < 50 && (await scalar(t, lapsed)) === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(await scalar(t, lapsed), 1, 'the first request holds a lapsed reservation');
    }
    const retry = charge(t, c.apiKey, 'lease-1', body);
    const [a, b] = await Promise.all([slow, retry]);

    if (t.container.database.kind === 'postgres') {
      // The retry found the lease lapsed and took over; the first request could not write its answer.
      assert.equal(a.statusCode, 409, a.body);
      assert.equal(a.json().code, 'IDEMPOTENCY_KEY_IN_USE');
      assertFresh201(b, 'slow');
      assertReplayOf(await charge(t, c.apiKey, 'lease-1', body), b);
    } else {
      // PGlite has one connection: the retry cannot even authenticate until the first transaction ends,
      // so it finds the finished record and replays it. (The takeover itself is covered above and in crash.test.ts.)
      assertFresh201(a, 'slow');
      assertReplayOf(b, a);
    }
    assert.equal(await debitCount(t, c.id), 1);
    assert.equal(await fixtureAuditCount(t, c.id), 1);
    assert.equal(await balanceMicros(t, c.apiKey), 5_000_000 - PRICE_MICROS);
  });
});

describe('idempotency (the longest TTL config accepts)', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { IDEMPOTENCY_TTL_HOURS: String(MAX_IDEMPOTENCY_TTL_HOURS) }, beforeReady: (app, c) => registerBillableFixture(app, c) });
  });
  after(() => t.close());

  test('a record kept that long is stored and replayed (its expiry fits the SQL)', async () => {
    const c = await t.createCustomer(500);
    const first = await charge(t, c.apiKey, 'ttl-1', { title: 'long-kept' });
    assertFresh201(first, 'long-kept');
    assertReplayOf(await charge(t, c.apiKey, 'ttl-1', { title: 'long-kept' }), first);
  });
});
