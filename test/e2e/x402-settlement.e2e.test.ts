/**
 * How an x402 settlement is written down and resolved (DESIGN §4.17, §4.18), on a real local chain: the
 * settle runs with no transaction open, so no connection waits on it; a settle with no clear outcome is
 * not a refusal; a settlement left open is resolved on-chain by the sweep.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { eq } from 'drizzle-orm';
import type { PrivateKeyAccount } from 'viem/accounts';
import { openDatabase } from '../../src/db/client.js';
import { ledgerEntries, operatorAlerts, x402Refunds, x402Settlements } from '../../src/db/schema/index.js';
import { bearer, createTestApp, type TestApp } from '../harness.js';
import { FIXTURE_PATH, registerBillableFixture } from '../fixtures/billable-route.js';
import { newKey } from '../fixtures/envelopes.js';
import { startChain, type Chain, type FacilitatorMode } from './x402-chain.js';
import { x402Env, x402Payers } from './x402-payer.js';

const PRICE = 100_000n; // the fixture route: USD 0.10

let chain: Chain;
let payers: ReturnType<typeof x402Payers>;

before(async () => {
  chain = await startChain();
  payers = x402Payers(chain);
});
after(async () => {
  await chain?.close();
});

/** An app on the chain, listening, with the billable fixture route. */
async function paidApp(opts: Parameters<typeof createTestApp>[0] = {}): Promise<{ t: TestApp; base: string }> {
  const t = await createTestApp({ ...opts, env: x402Env(chain, { X402_SETTLE_TIMEOUT_MS: '5000', ...opts.env }), beforeReady: (app, c) => registerBillableFixture(app, c) });
  return { t, base: await t.app.listen({ port: 0, host: '127.0.0.1' }) };
}

const post = (base: string, title: string, headers: Record<string, string> = {}) =>
  fetch(`${base}${FIXTURE_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': newKey(), ...headers }, body: JSON.stringify({ title }) });

async function payment(base: string, payer: PrivateKeyAccount, title: string): Promise<string> {
  const res = await post(base, title);
  assert.equal(res.status, 402, await res.text());
  const required: PaymentRequired = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
  return payers.sign(payer, required);
}

/** Resolves with what `work` answers, or 'no answer' once `ms` passed: a hang fails the test instead of stalling it. */
const within = <T>(ms: number, work: Promise<T>) => Promise.race([work, sleep(ms).then(() => 'no answer' as const)]);

async function whileFacilitator<T>(mode: FacilitatorMode, work: () => Promise<T>): Promise<T> {
  chain.setFacilitatorMode(mode);
  try {
    return await work();
  } finally {
    chain.setFacilitatorMode('normal');
  }
}

async function untilSettling(n = 1): Promise<void> {
  for (let i = 0; chain.settlesInFlight() < n; i++) {
    assert.ok(i < 400, 'the settle never reached the facilitator');
    await sleep(10);
  }
}

describe('no connection waits on a settle', () => {
  test('an unrelated read is answered while a paid call settles (on PGlite, one connection, too)', async () => {
    const { t, base } = await paidApp();
    try {
      const payer = await payers.funded();
      const header = await payment(base, payer, 'Slow settle');
      await whileFacilitator('delay-settle', async () => {
        const paid = post(base, 'Slow settle', { 'payment-signature': header });
        await untilSettling();
        const account = await within(5000, t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) }));
        assert.notEqual(account, 'no answer');
        if (account !== 'no answer') assert.equal(account.statusCode, 200, account.body);
        assert.equal(chain.settlesInFlight(), 1, 'the read was answered before the settle ended, not after it');
        assert.equal((await paid).status, 201);
      });
    } finally {
      await t.close();
    }
  });

  test('PostgreSQL, a pool of 3: 5 paid calls settling at once hold no connection; an unrelated read is answered; each call commits once', { skip: !process.env.DATABASE_URL && 'a pool needs PostgreSQL', timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-x402-pool-'));
    const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir, poolSize: 3, schemaName: `t_${randomBytes(6).toString('hex')}` });
    const { t, base } = await paidApp({ overrides: { database } });
    try {
      const calls: { payer: PrivateKeyAccount; title: string; header: string }[] = [];
      // One at a time: each mint is a transaction of the deployer's account.
      for (let i = 0; i < 5; i++) {
        const payer = await payers.funded();
        calls.push({ payer, title: `Pool ${i}`, header: await payment(base, payer, `Pool ${i}`) });
      }
      await whileFacilitator('delay-settle', async () => {
        const paid = calls.map((c) => post(base, c.title, { 'payment-signature': c.header }).then((r) => r.status));
        await untilSettling(calls.length);
        const account = await within(5000, t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) }));
        assert.notEqual(account, 'no answer', 'the read waited for a connection');
        if (account !== 'no answer') assert.equal(account.statusCode, 200, account.body);
        assert.ok(chain.settlesInFlight() > 0, 'the read was answered while settles were in flight');
        assert.deepEqual(await within(60_000, Promise.all(paid)), calls.map(() => 201));
      });
      for (const c of calls) {
        const rows = await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.payer, c.payer.address.toLowerCase()));
        assert.deepEqual(rows.map((r) => r.status), ['committed']);
        assert.equal(await chain.balanceOf(c.payer.address), 1_000_000n - PRICE);
      }
    } finally {
      await t.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a settle with no clear outcome, and the sweep', () => {
  let t: TestApp;
  let base: string;
  before(async () => ({ t, base } = await paidApp()));
  after(() => t?.close());

  const settlementsOf = (payer: PrivateKeyAccount) => t.container.db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
  const alertsOf = async (kind: string, payer: PrivateKeyAccount) =>
    (await t.container.db.select().from(operatorAlerts).where(eq(operatorAlerts.kind, kind))).filter((a) => (a.data as { payer?: string } | null)?.payer === payer.address.toLowerCase());
  const sweep = () => t.container.x402!.service.resolvePendingSettlements(0);

  test('settlement_pending (the transfer broadcast, not confirmed): 503 with the key released and an alert with the hash; the sweep finds it on-chain and refunds it', async () => {
    const payer = await payers.funded();
    const key = newKey();
    const header = await payment(base, payer, 'Pending');
    const res = await whileFacilitator('pending-settle', () => post(base, 'Pending', { 'idempotency-key': key, 'payment-signature': header }));
    const body = await res.json();
    assert.equal(res.status, 503, JSON.stringify(body));
    assert.equal(body.code, 'RELAYSTATION_UNAVAILABLE');
    assert.match(body.transaction, /^0x[0-9a-f]{64}$/);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE, 'the transfer landed');
    const [pending] = await settlementsOf(payer);
    assert.equal(pending.status, 'pending');
    assert.equal(pending.txHash, body.transaction);
    const [alert] = await alertsOf('x402_settle_unknown', payer);
    assert.equal((alert.data as { txHash: string }).txHash, body.transaction);
    assert.equal((await t.container.db.select().from(ledgerEntries).where(eq(ledgerEntries.txHash, body.transaction))).length, 0, 'nothing of the call committed');

    // The key was released: the same request with a new payment runs (it is no replay of the 503).
    const retry = await post(base, 'Pending', { 'idempotency-key': key, 'payment-signature': await payment(base, payer, 'Pending') });
    assert.equal(retry.status, 201, await retry.clone().text());
    assert.equal(retry.headers.get('idempotent-replayed'), null);

    assert.equal(await sweep(), 1);
    const rows = await settlementsOf(payer);
    const first = rows.find((r) => r.id === pending.id)!;
    assert.equal(first.status, 'orphaned');
    assert.deepEqual(rows.filter((r) => r.id !== pending.id).map((r) => r.status), ['committed']);
    const [refund] = await t.container.db.select().from(x402Refunds).where(eq(x402Refunds.settlementId, pending.id));
    assert.equal(refund?.originalTxHash, body.transaction);
    assert.ok((await t.container.db.select().from(operatorAlerts).where(eq(operatorAlerts.kind, 'x402_refund_required'))).some((a) => a.resourceId === refund.id));
    assert.equal(await sweep(), 0, 'resolved once');
  });

  test('a failure that names a transaction is not a refusal either (503, its hash alerted); unused on-chain, the sweep waits for its validBefore, then marks it failed', async () => {
    const payer = await payers.funded();
    const header = await payment(base, payer, 'Reverted');
    const res = await whileFacilitator('revert-settle', () => post(base, 'Reverted', { 'payment-signature': header }));
    const body = await res.json();
    assert.equal(res.status, 503, JSON.stringify(body));
    assert.equal(body.code, 'RELAYSTATION_UNAVAILABLE');
    const [alert] = await alertsOf('x402_settle_unknown', payer);
    assert.equal((alert.data as { txHash: string }).txHash, body.transaction);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n);

    const [row] = await settlementsOf(payer);
    assert.equal(row.status, 'pending');
    await sweep();
    assert.equal((await settlementsOf(payer))[0].status, 'pending', 'the authorization is still valid: it may yet land');
    await t.container.db.update(x402Settlements).set({ validBefore: new Date(Date.now() - 3_600_000) }).where(eq(x402Settlements.id, row.id));
    await sweep();
    assert.equal((await settlementsOf(payer))[0].status, 'failed');
    assert.equal((await t.container.db.select().from(x402Refunds).where(eq(x402Refunds.settlementId, row.id))).length, 0);
  });

  test('one authorization sent with two calls at once: the one whose settlement is written down first settles, the other is refused (402 authorization_already_used)', async () => {
    const payer = await payers.funded();
    const header = await payment(base, payer, 'Twice');
    const [a, b] = await whileFacilitator('delay-settle', async () => {
      const first = post(base, 'Twice', { 'payment-signature': header });
      await untilSettling();
      // Verified too (the nonce is still unused on-chain while the first settles), then refused.
      const second = await post(base, 'Twice', { 'payment-signature': header });
      return [await first, second];
    });
    assert.equal(a.status, 201);
    const body = await b.json();
    assert.equal(b.status, 402, JSON.stringify(body));
    assert.equal(body.code, 'PAYMENT_INVALID');
    assert.equal(body.reason, 'authorization_already_used');
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE);
    assert.deepEqual((await settlementsOf(payer)).map((s) => s.status), ['committed']);
  });

  test('a settle answering a transaction already on record: the call is refused (402 PAYMENT_INVALID), nothing committed, an operator alerted', async () => {
    const first = await payers.funded();
    const paid = await post(base, 'First', { 'payment-signature': await payment(base, first, 'First') });
    assert.equal(paid.status, 201);
    const payer = await payers.funded();
    const header = await payment(base, payer, 'Repeated');
    const res = await whileFacilitator('repeat-settle', () => post(base, 'Repeated', { 'payment-signature': header }));
    const body = await res.json();
    assert.equal(res.status, 402, JSON.stringify(body));
    assert.equal(body.code, 'PAYMENT_INVALID');
    assert.equal(body.reason, 'transaction_already_recorded');
    const [row] = await settlementsOf(payer);
    assert.equal(row.status, 'pending', 'left for the sweep to look on-chain');
    assert.equal(row.txHash, null);
    assert.equal((await alertsOf('x402_settle_unknown', payer)).length, 1);
    const ledger = await t.container.db.select().from(ledgerEntries).where(eq(ledgerEntries.txHash, (await settlementsOf(first))[0].txHash!));
    assert.equal(ledger.length, 1, 'one ledger row for the one transfer');
  });
});

describe('the sweep without X402_RPC_URL', () => {
  test('a pending settlement it cannot look up on-chain ends `unknown`, with an operator alert', async () => {
    const { t, base } = await paidApp({ env: { X402_RPC_URL: '' } });
    try {
      const payer = await payers.funded();
      const header = await payment(base, payer, 'No RPC');
      const res = await whileFacilitator('pending-settle', () => post(base, 'No RPC', { 'payment-signature': header }));
      assert.equal(res.status, 503);
      const [row] = await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
      assert.equal(row.status, 'pending');
      assert.equal(await t.container.x402!.service.resolvePendingSettlements(0), 1);
      const [after] = await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.id, row.id));
      assert.equal(after.status, 'unknown');
      const alerts = (await t.container.db.select().from(operatorAlerts).where(eq(operatorAlerts.kind, 'x402_settle_unknown'))).filter((a) => a.resourceId === row.id);
      assert.equal(alerts.length, 2, 'one when the call answered 503, one when the sweep could not resolve it');
      assert.match(alerts.map((a) => a.message).join('\n'), /X402_RPC_URL is not set/);
    } finally {
      await t.close();
    }
  });
});
