import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql, type SQL } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { MICROS_PER_CENT, centsToMicros, formatDollars, formatUsd, microsToCents } from '../src/lib/money.js';
import { FIXTURE_PATH, registerBillableFixture } from './fixtures/billable-route.js';
import { OPS_TOKEN, bearer, createTestApp, type TestApp } from './harness.js';

const PRICE_MICROS = 100_000;

async function scalar(t: TestApp, query: SQL): Promise<number> {
  const [row] = rowsOf<{ n: number | string }>(await t.container.db.execute(query));
  return Number(row.n);
}

async function account(t: TestApp, apiKey: string) {
  const res = await t.app.inject({ url: '/v1/account', headers: bearer(apiKey) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json() as { creditsCents: number; creditsFormatted: string; balanceMicros: number; sandboxUsed: number; sandboxLimit: number };
}

function charge(t: TestApp, apiKey: string, key: string, title: string, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url: FIXTURE_PATH, headers: { ...bearer(apiKey), 'idempotency-key': key, ...headers }, payload: { title } });
}

describe('money formatting', () => {
  test('formatUsd shows at least two decimals and more only when the micros need them', () => {
    assert.equal(formatUsd(0n), '0.00');
    assert.equal(formatUsd(1n), '0.000001');
    assert.equal(formatUsd(10n), '0.00001');
    assert.equal(formatUsd(10_000n), '0.01');
    assert.equal(formatUsd(100_000n), '0.10');
    assert.equal(formatUsd(500_000n), '0.50');
    assert.equal(formatUsd(1_000_000n), '1.00');
    assert.equal(formatUsd(1_200_000n), '1.20');
    assert.equal(formatUsd(1_230_000n), '1.23');
    assert.equal(formatUsd(1_234_000n), '1.234');
    assert.equal(formatUsd(1_234_567n), '1.234567');
    assert.equal(formatUsd(5_000_000n), '5.00');
    assert.equal(formatUsd(3_300_000n), '3.30');
    assert.equal(formatUsd(1_000_000_000_000n), '1000000.00');
    assert.equal(formatUsd(9_007_199_254_740_993_000_001n), '9007199254740993.000001', 'beyond Number precision stays exact');
    assert.equal(formatUsd(-100_000n), '-0.10');
    assert.equal(formatUsd(-1n), '-0.000001');
  });

  test('formatDollars prefixes a dollar sign', () => {
    assert.equal(formatDollars(0n), '$0.00');
    assert.equal(formatDollars(5_000_000n), '$5.00');
    assert.equal(formatDollars(123_456n), '$0.123456');
  });

  test('cents and micros convert at 10,000 micros per cent; micros round down to whole cents', () => {
    assert.equal(MICROS_PER_CENT, 10_000n);
    assert.equal(centsToMicros(0), 0n);
    assert.equal(centsToMicros(330), 3_300_000n);
    assert.equal(centsToMicros(100_000_000), 1_000_000_000_000n);
    assert.equal(centsToMicros(7n), 70_000n);
    assert.equal(microsToCents(3_300_000n), 330);
    assert.equal(microsToCents(3_309_999n), 330);
    assert.equal(microsToCents(9_999n), 0);
    assert.equal(microsToCents(10_000n), 1);
    assert.throws(() => centsToMicros(1.5), RangeError, 'fractional cents are refused, not rounded');
  });
});

describe('billing', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { SANDBOX_LIMIT: '2' }, beforeReady: (app, c) => registerBillableFixture(app, c) });
  });
  after(() => t.close());

  test('200 concurrent debits against a balance that covers 33: exactly 33 succeed, the rest are 402, the balance ends at 0', async () => {
    const c = await t.createCustomer(330);
    const before = await account(t, c.apiKey);
    assert.equal(before.balanceMicros, 3_300_000);

    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => charge(t, c.apiKey, `race-${i}`, `race-${i}`)));
    const ok = results.filter((r) => r.statusCode === 201);
    const refused = results.filter((r) => r.statusCode === 402);
    assert.equal(ok.length, 33, `statuses: ${[...new Set(results.map((r) => r.statusCode))].join(',')}`);
    assert.equal(refused.length, 167);
    for (const r of ok) assert.equal(r.json().charged, true);
    for (const r of refused) {
      const body = r.json();
      assert.equal(body.code, 'INSUFFICIENT_BALANCE');
      assert.equal(body.priceUsd, '0.10');
      assert.equal(body.priceMicros, PRICE_MICROS);
      // Debits only ever lower the balance in whole prices, so the one that fails saw it at zero.
      assert.equal(body.balanceUsd, '0.00');
      assert.equal(body.balanceMicros, 0);
      assert.equal(body.topUpUrl, 'http://signet.test/dashboard/billing');
      assert.equal(body.retryable, false);
      assert.equal(typeof body.error, 'string');
    }

    const after = await account(t, c.apiKey);
    assert.equal(after.balanceMicros, 0);
    assert.equal(after.creditsCents, 0);
    assert.equal(after.creditsFormatted, '$0.00');

    const ledger = rowsOf<{ amount: string | number; after: string | number }>(
      await t.container.db.execute(sql`SELECT amount_micros AS amount, balance_after_micros AS after FROM ledger_entries
        WHERE customer_id = ${c.id} AND direction = 'debit' ORDER BY balance_after_micros DESC`),
    );
    assert.equal(ledger.length, 33);
    const debitSum = ledger.reduce((sum, r) => sum + BigInt(r.amount), 0n);
    assert.equal(debitSum, BigInt(before.balanceMicros - after.balanceMicros), 'the debits add up to the balance change');
    // Every debit saw a distinct balance: 3.20, 3.10, ... 0.00 — they serialized, none went below zero.
    assert.deepEqual(
      ledger.map((r) => Number(r.after)),
      Array.from({ length: 33 }, (_, i) => 3_200_000 - i * PRICE_MICROS),
    );
    assert.deepEqual(new Set(ok.map((r) => r.json().ledgerEntryId)).size, 33);
    assert.equal(await scalar(t, sql`SELECT count(*)::int AS n FROM audit_log WHERE customer_id = ${c.id} AND action = 'fixture.create'`), 33);

    // A 402 is the request's answer: the same key replays it even after a top-up (fix it with a fresh key).
    const refusedIndex = results.findIndex((r) => r.statusCode === 402);
    const topUp = await t.app.inject({
      method: 'POST',
      url: `/ops/customers/${c.id}/credits`,
      headers: { ...bearer(OPS_TOKEN), 'idempotency-key': randomUUID() },
      payload: { amountCents: 10, reason: 'top-up' },
    });
    assert.equal(topUp.statusCode, 200, topUp.body);
    const replay = await charge(t, c.apiKey, `race-${refusedIndex}`, `race-${refusedIndex}`);
    assert.equal(replay.statusCode, 402);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body, results[refusedIndex].body);
    const fresh = await charge(t, c.apiKey, `race-${refusedIndex}-again`, `race-${refusedIndex}`);
    assert.equal(fresh.statusCode, 201, fresh.body);
    assert.equal((await account(t, c.apiKey)).balanceMicros, 0);
  });

  test('the database refuses a negative balance even to direct SQL', async () => {
    const c = await t.createCustomer(5);
    await assert.rejects(
      t.container.db.execute(sql`UPDATE customers SET balance_micros = balance_micros - 50001 WHERE id = ${c.id}`),
      (err: Error & { cause?: { code?: string; constraint?: string; message?: string } }) => {
        const text = `${err.message} ${err.cause?.message ?? ''} ${err.cause?.constraint ?? ''}`;
        assert.equal(err.cause?.code ?? (err as { code?: string }).code, '23514', text);
        assert.match(text, /customers_balance_non_negative/);
        return true;
      },
    );
    // Exactly zero is allowed; the row is unchanged by the refused update.
    assert.equal((await account(t, c.apiKey)).balanceMicros, 50_000);
    await t.container.db.execute(sql`UPDATE customers SET balance_micros = balance_micros - 50000 WHERE id = ${c.id}`);
    assert.equal((await account(t, c.apiKey)).balanceMicros, 0);
  });

  test('a debit that the balance does not cover leaves no trace but its stored 402', async () => {
    const c = await t.createCustomer(5);
    const res = await charge(t, c.apiKey, 'short-1', 'short');
    assert.equal(res.statusCode, 402, res.body);
    const body = res.json();
    assert.equal(body.code, 'INSUFFICIENT_BALANCE');
    assert.equal(body.balanceUsd, '0.05');
    assert.equal(body.balanceMicros, 50_000);
    assert.equal(body.priceUsd, '0.10');
    assert.equal((await account(t, c.apiKey)).balanceMicros, 50_000);
    assert.equal(await scalar(t, sql`SELECT count(*)::int AS n FROM ledger_entries WHERE customer_id = ${c.id} AND direction = 'debit'`), 0);
    assert.equal(await scalar(t, sql`SELECT count(*)::int AS n FROM audit_log WHERE customer_id = ${c.id} AND action = 'fixture.create'`), 0);
  });

  test('test mode is free up to the sandbox allowance, then 402 SANDBOX_LIMIT_REACHED', async () => {
    const c = await t.createCustomer(100);
    const viaTestKey = await charge(t, c.testApiKey, 'sb-1', 'sb-1');
    assert.equal(viaTestKey.statusCode, 201, viaTestKey.body);
    assert.deepEqual(viaTestKey.json(), { title: 'sb-1', charged: false, ledgerEntryId: null });
    // A live key with X-Service-Test-Mode: true is sandboxed too.
    const viaHeader = await charge(t, c.apiKey, 'sb-2', 'sb-2', { 'x-service-test-mode': 'true' });
    assert.equal(viaHeader.statusCode, 201, viaHeader.body);
    assert.equal(viaHeader.json().charged, false);

    const over = await charge(t, c.testApiKey, 'sb-3', 'sb-3');
    assert.equal(over.statusCode, 402, over.body);
    assert.equal(over.json().code, 'SANDBOX_LIMIT_REACHED');
    assert.equal(over.json().retryable, false);

    const acct = await account(t, c.apiKey);
    assert.equal(acct.sandboxUsed, 2);
    assert.equal(acct.sandboxLimit, 2);
    assert.equal(acct.balanceMicros, 1_000_000);
    assert.equal(await scalar(t, sql`SELECT count(*)::int AS n FROM ledger_entries WHERE customer_id = ${c.id} AND direction = 'debit'`), 0);
    // The live balance still pays for a live call.
    const live = await charge(t, c.apiKey, 'sb-live', 'sb-live');
    assert.equal(live.statusCode, 201, live.body);
    assert.equal(live.json().charged, true);
  });

  describe('POST /ops/customers/{id}/credits', () => {
    const credit = (id: string, payload: unknown, headers: Record<string, string> = bearer(OPS_TOKEN)) =>
      t.app.inject({ method: 'POST', url: `/ops/customers/${id}/credits`, headers: { 'idempotency-key': randomUUID(), ...headers }, payload: payload as object });

    test('adds credits and a credit ledger row', async () => {
      const c = await t.createCustomer(0);
      assert.equal((await account(t, c.apiKey)).creditsCents, 0);

      const res = await credit(c.id, { amountCents: 250, reason: 'Goodwill grant' });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { creditsCents: 250 });
      const res2 = await credit(c.id, { amountCents: 1, reason: 'One more cent' });
      assert.deepEqual(res2.json(), { creditsCents: 251 });

      const acct = await account(t, c.apiKey);
      assert.equal(acct.creditsCents, 251);
      assert.equal(acct.balanceMicros, 2_510_000);
      assert.equal(acct.creditsFormatted, '$2.51');

      const usage = await t.app.inject({ url: '/v1/account/usage', headers: bearer(c.apiKey) });
      assert.equal(usage.statusCode, 200, usage.body);
      const page = usage.json();
      assert.equal(page.total, 2);
      const [latest, first] = page.data;
      assert.equal(latest.direction, 'credit');
      assert.equal(latest.amountCents, 1);
      assert.equal(latest.amountMicros, 10_000);
      assert.equal(latest.amountFormatted, '$0.01');
      assert.equal(latest.description, 'One more cent');
      assert.equal(first.direction, 'credit');
      assert.equal(first.amountCents, 250);
      assert.equal(first.amountMicros, 2_500_000);
      assert.equal(first.amountFormatted, '$2.50');
      assert.equal(first.description, 'Goodwill grant');
      assert.equal(first.envelopeId, null);
      assert.equal(first.txHash, null);

      const rows = rowsOf<{ after: string | number }>(
        await t.container.db.execute(sql`SELECT balance_after_micros AS after FROM ledger_entries WHERE customer_id = ${c.id} ORDER BY balance_after_micros`),
      );
      assert.deepEqual(rows.map((r) => Number(r.after)), [2_500_000, 2_510_000]);
      assert.equal(await scalar(t, sql`SELECT count(*)::int AS n FROM audit_log WHERE customer_id = ${c.id} AND action = 'credits.add'`), 2);
    });

    test('a zero or negative amount is 400 VALIDATION_ERROR and changes nothing', async () => {
      const c = await t.createCustomer(100);
      for (const amountCents of [0, -1, -500]) {
        const res = await credit(c.id, { amountCents, reason: 'nope' });
        assert.equal(res.statusCode, 400, res.body);
        const body = res.json();
        assert.equal(body.code, 'VALIDATION_ERROR');
        assert.equal(body.details[0].path, 'body.amountCents');
      }
      const fractional = await credit(c.id, { amountCents: 1.5, reason: 'nope' });
      assert.equal(fractional.statusCode, 400);
      assert.equal(fractional.json().code, 'VALIDATION_ERROR');
      assert.equal((await account(t, c.apiKey)).balanceMicros, 1_000_000);
      assert.equal(await scalar(t, sql`SELECT count(*)::int AS n FROM ledger_entries WHERE customer_id = ${c.id}`), 1);
    });

    test('an unknown customer is 404 CUSTOMER_NOT_FOUND', async () => {
      const res = await credit(randomUUID(), { amountCents: 100, reason: 'ghost' });
      assert.equal(res.statusCode, 404, res.body);
      assert.equal(res.json().code, 'CUSTOMER_NOT_FOUND');
    });

    test('needs the operator token', async () => {
      const c = await t.createCustomer(0);
      const none = await credit(c.id, { amountCents: 100, reason: 'x' }, {});
      assert.equal(none.statusCode, 401);
      assert.equal(none.json().code, 'UNAUTHORIZED');
      const customerKey = await credit(c.id, { amountCents: 100, reason: 'x' }, bearer(c.apiKey));
      assert.equal(customerKey.statusCode, 401);
      assert.equal(customerKey.json().code, 'UNAUTHORIZED');
      assert.equal((await account(t, c.apiKey)).balanceMicros, 0);
    });
  });
});
