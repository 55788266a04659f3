import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { wrapFetchWithPayment } from '@x402/fetch';
import { eq, sql } from 'drizzle-orm';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { rowsOf } from '../../src/db/client.js';
import { auditLog, customers, envelopes, ledgerEntries, operatorAlerts, x402Refunds, x402Settlements } from '../../src/db/schema/index.js';
import { OPS_TOKEN, bearer, createTestApp, type TestApp } from '../harness.js';
import { signIn } from '../fixtures/wallet.js';
import { FIXTURE_PATH, registerBillableFixture } from '../fixtures/billable-route.js';
import { envelopeBody, newKey, samplePdf, sigField, signer } from '../fixtures/envelopes.js';
import { ANVIL_KEYS, NETWORK, TOKEN_NAME, TOKEN_VERSION, startChain, type Chain, type FacilitatorMode } from './x402-chain.js';
import { x402Payers } from './x402-payer.js';

/**
 * x402 end to end on a real local chain: anvil, an EIP-3009 token, @x402/evm's facilitator over HTTP,
 * and @x402/fetch paying with a viem account. Prices are asset amounts (6 decimals: 1 unit = 1 micro).
 */
const PRICE = 100_000n; // POST /v1/envelopes: USD 0.10
const COMMIT_FAILS = '/v1/fixture/commit-fails';

let chain: Chain;
let t: TestApp;
let base: string;

before(async () => {
  chain = await startChain();
  t = await createTestApp({
    env: {
      X402_FACILITATOR_URL: chain.facilitatorUrl,
      X402_NETWORK: NETWORK,
      X402_ASSET: chain.token,
      X402_PAY_TO: chain.payTo,
      X402_ASSET_NAME: TOKEN_NAME,
      X402_ASSET_VERSION: TOKEN_VERSION,
      X402_SETTLE_TIMEOUT_MS: '2000',
    },
    beforeReady: (app, c) => {
      // A paid route whose handler can be told to fail after its charge (4xx or 5xx).
      registerBillableFixture(app, c);
      // A paid route whose transaction fails at COMMIT (a deferred foreign key), after the payment settled.
      // It takes the envelope's multipart body (and ignores it): a route reads one only when it says so.
      app.post(COMMIT_FAILS, { config: { auth: 'customer' }, schema: { consumes: ['multipart/form-data'] } }, (request, reply) =>
        c.commitMutation(request, reply, async (tx) => {
          await tx.execute(sql`INSERT INTO x402_test_child (parent_id) VALUES (42)`);
          return { status: 200, body: { ok: true } };
        }),
      );
    },
  });
  await t.container.db.execute(sql`CREATE TABLE x402_test_parent (id int PRIMARY KEY)`);
  await t.container.db.execute(sql`CREATE TABLE x402_test_child (parent_id int REFERENCES x402_test_parent (id) DEFERRABLE INITIALLY DEFERRED)`);
  const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = address;
});

after(async () => {
  await t?.close();
  await chain?.close();
});

async function createBody(title = 'Paid'): Promise<{ body: Buffer; contentType: string }> {
  return envelopeBody([await samplePdf()], { title, recipients: [signer(1)], fields: [sigField(signer(1).email)] });
}

function post(url: string, mp: { body: Buffer; contentType: string }, headers: Record<string, string> = {}, doFetch: typeof fetch = fetch) {
  return doFetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': mp.contentType, 'idempotency-key': newKey(), ...headers }, body: new Uint8Array(mp.body) });
}

const funded = (amount?: bigint) => x402Payers(chain).funded(amount);
const payingClient = (account: PrivateKeyAccount) => x402Payers(chain).client(account);
/** A signed payment for the requirements a 402 announced, sent by hand (replays, the Alt header). */
const signedPayment = (account: PrivateKeyAccount, required: PaymentRequired) => x402Payers(chain).sign(account, required);

async function requirementsFor(url: string, mp: { body: Buffer; contentType: string }): Promise<PaymentRequired> {
  const res = await post(url, mp);
  assert.equal(res.status, 402);
  return decodePaymentRequiredHeader(res.headers.get('payment-required')!);
}

const countEnvelopes = async () => (await t.container.db.select().from(envelopes)).length;

/** Pays a create with a signed payment while the facilitator behaves as `mode`; the envelope count from before. */
async function payWhileFacilitator(mode: FacilitatorMode, title: string) {
  const payer = await funded();
  const mp = await createBody(title);
  const payment = await signedPayment(payer, await requirementsFor('/v1/envelopes', mp));
  const before = await countEnvelopes();
  chain.setFacilitatorMode(mode);
  try {
    const res = await post('/v1/envelopes', mp, { 'payment-signature': payment });
    return { payer, before, status: res.status, body: await res.json() };
  } finally {
    chain.setFacilitatorMode('normal');
  }
}

describe('x402 on a local chain', () => {
  test('no credentials: 402 with PAYMENT-REQUIRED (v2, exact, the route price in asset units) and SPEC error body', async () => {
    const res = await post('/v1/envelopes', await createBody());
    assert.equal(res.status, 402);
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    assert.equal(required.x402Version, 2);
    assert.equal(required.accepts.length, 1);
    const [req] = required.accepts;
    assert.equal(req.scheme, 'exact');
    assert.equal(req.network, NETWORK);
    assert.equal(req.amount, PRICE.toString());
    assert.equal(req.asset.toLowerCase(), chain.token.toLowerCase());
    assert.equal(req.payTo.toLowerCase(), chain.payTo.toLowerCase());
    assert.ok(req.maxTimeoutSeconds > 0);
    assert.equal(req.extra?.name, TOKEN_NAME);
    assert.equal(req.extra?.version, TOKEN_VERSION);
    const body = await res.json();
    assert.equal(body.code, 'PAYMENT_REQUIRED');
    assert.equal(body.priceUsd, '0.10');
    assert.equal(body.priceMicros, 100_000);
    assert.ok(body.requestId);
  });

  test('an unpriced mutation asks X402_MIN_PRICE (default USD 0.001)', async () => {
    const res = await fetch(`${base}/v1/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://example.com/hook', events: ['*'] }) });
    assert.equal(res.status, 402);
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    assert.equal(required.accepts[0].amount, '1000');
    assert.equal((await res.json()).priceMicros, 1000);
  });

  test('@x402/fetch pays: 201, exactly the price moved on-chain, a ledger row with its txHash, a settlement row', async () => {
    const payer = await funded();
    const before = { payer: await chain.balanceOf(payer.address), payTo: await chain.balanceOf(chain.payTo) };
    const res = await post('/v1/envelopes', await createBody('Paid on chain'), {}, wrapFetchWithPayment(fetch, payingClient(payer)));
    const body = await res.json();
    assert.equal(res.status, 201, JSON.stringify(body));
    assert.equal(await chain.balanceOf(payer.address), before.payer - PRICE);
    assert.equal(await chain.balanceOf(chain.payTo), before.payTo + PRICE);
    const receipt = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    assert.equal(receipt.success, true);
    assert.match(receipt.transaction, /^0x[0-9a-f]{64}$/);

    const [customer] = await t.container.db.select().from(customers).where(eq(customers.walletAddress, payer.address.toLowerCase()));
    assert.ok(customer, 'the first payment creates the customer');
    const audit = await t.container.db.select().from(auditLog).where(eq(auditLog.customerId, customer.id));
    assert.deepEqual(audit.map((a) => [a.action, a.actorType]).sort(), [['envelope.create', 'x402'], ['x402.sign_up', 'x402']].sort(), JSON.stringify(audit.map((a) => a.action)));
    const ledger = await t.container.db.select().from(ledgerEntries).where(eq(ledgerEntries.customerId, customer.id));
    assert.equal(ledger.length, 1);
    assert.equal(ledger[0].txHash, receipt.transaction);
    assert.equal(ledger[0].amountMicros, PRICE);
    assert.equal(ledger[0].envelopeId, body.envelopeId);
    const settlements = await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.txHash, receipt.transaction));
    assert.equal(settlements.length, 1);
    assert.equal(settlements[0].payer, payer.address.toLowerCase());
    assert.equal(settlements[0].amountMicros, PRICE);
    assert.equal(settlements[0].network, NETWORK);
    assert.equal(settlements[0].status, 'committed');
  });

  test('the Alt x-payment header pays as PAYMENT-SIGNATURE does', async () => {
    const payer = await funded();
    const mp = await createBody('Alt header');
    const payment = await signedPayment(payer, await requirementsFor('/v1/envelopes', mp));
    const res = await post('/v1/envelopes', mp, { 'x-payment': payment });
    assert.equal(res.status, 201, await res.clone().text());
    assert.ok(res.headers.get('payment-response'));
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE);
  });

  test('a replayed payment is refused and moves nothing', async () => {
    const payer = await funded();
    const mp = await createBody('Replay');
    const payment = await signedPayment(payer, await requirementsFor('/v1/envelopes', mp));
    assert.equal((await post('/v1/envelopes', mp, { 'payment-signature': payment })).status, 201);
    const n = await countEnvelopes();
    const res = await post('/v1/envelopes', mp, { 'payment-signature': payment });
    assert.equal(res.status, 402);
    const body = await res.json();
    assert.equal(body.code, 'PAYMENT_INVALID');
    assert.match(body.reason, /nonce|used/i);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE);
    assert.equal(await countEnvelopes(), n);
  });

  test('an idempotent retry with a fresh payment replays the answer and settles nothing', async () => {
    const payer = await funded();
    const mp = await createBody('Retry');
    const required = await requirementsFor('/v1/envelopes', mp);
    const key = newKey();
    const first = await post('/v1/envelopes', mp, { 'idempotency-key': key, 'payment-signature': await signedPayment(payer, required) });
    assert.equal(first.status, 201);
    const second = await post('/v1/envelopes', mp, { 'idempotency-key': key, 'payment-signature': await signedPayment(payer, required) });
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal((await second.json()).envelopeId, (await first.json()).envelopeId);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE);
  });

  test('a payer without funds: 402 INSUFFICIENT_BALANCE with the SPEC extras, nothing created', async () => {
    const payer = await funded(PRICE - 1n);
    const mp = await createBody('Broke');
    const payment = await signedPayment(payer, await requirementsFor('/v1/envelopes', mp));
    const n = await countEnvelopes();
    const res = await post('/v1/envelopes', mp, { 'payment-signature': payment });
    assert.equal(res.status, 402);
    const body = await res.json();
    assert.equal(body.code, 'INSUFFICIENT_BALANCE');
    assert.equal(body.priceUsd, '0.10');
    assert.equal(body.priceMicros, 100_000);
    assert.equal(typeof body.balanceMicros, 'number');
    assert.equal(body.retryable, false);
    assert.ok(body.topUpUrl);
    assert.equal(await countEnvelopes(), n);
  });

  test('a signature by another key than the claimed from: 401 INVALID_SIGNATURE', async () => {
    const payer = await funded();
    const mp = await createBody('Forged');
    const required = await requirementsFor('/v1/envelopes', mp);
    const payload = await payingClient(payer).createPaymentPayload(required);
    const forger = privateKeyToAccount(ANVIL_KEYS[3]);
    const forged = await payingClient(forger).createPaymentPayload(required);
    // The forger's signature over an authorization that claims to come from the payer.
    const claimed = { ...forged, payload: { ...forged.payload, authorization: { ...(forged.payload as { authorization: object }).authorization, from: payer.address } } };
    void payload;
    const res = await post('/v1/envelopes', mp, { 'payment-signature': encodePaymentSignatureHeader(claimed) });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).code, 'INVALID_SIGNATURE');
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n);
  });

  for (const [what, tamper, reason] of [
    ['another receiver', (r: PaymentRequired['accepts'][number]) => ({ ...r, payTo: privateKeyToAccount(ANVIL_KEYS[3]).address }), /recipient/],
    ['a lower amount', (r: PaymentRequired['accepts'][number]) => ({ ...r, amount: '1' }), /value|amount/],
    ['an expired window', (r: PaymentRequired['accepts'][number]) => ({ ...r, maxTimeoutSeconds: -60 }), /valid_before/],
  ] as const) {
    test(`a payment signed for ${what}: 402 PAYMENT_INVALID with x402's reason, nothing moved`, async () => {
      const payer = await funded();
      const mp = await createBody(`Tampered ${what}`);
      const required = await requirementsFor('/v1/envelopes', mp);
      const payment = await signedPayment(payer, { ...required, accepts: [tamper(required.accepts[0])] });
      const n = await countEnvelopes();
      const res = await post('/v1/envelopes', mp, { 'payment-signature': payment });
      const body = await res.json();
      assert.equal(res.status, 402, JSON.stringify(body));
      assert.equal(body.code, 'PAYMENT_INVALID');
      assert.match(body.reason, reason);
      assert.ok(res.headers.get('payment-required'));
      assert.equal(await countEnvelopes(), n);
      assert.equal(await chain.balanceOf(payer.address), 1_000_000n);
    });
  }

  test('a handler that fails (4xx or 5xx) after the payment settled: the settlement is orphaned, a wallet refund recorded, nothing else committed', async () => {
    const payer = await funded();
    for (const fail of ['client', 'server'] as const) {
      const json = { body: Buffer.from(JSON.stringify({ title: `fail-${fail}`, fail })), contentType: 'application/json' };
      const payment = await signedPayment(payer, await requirementsFor(FIXTURE_PATH, json));
      const res = await post(FIXTURE_PATH, json, { 'payment-signature': payment });
      assert.equal(res.status, fail === 'client' ? 400 : 500);
      assert.equal(res.headers.get('payment-response'), null);
    }
    // The settle runs before the work's transaction (none is held open across it): the money moved, and comes back.
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - 2n * PRICE);
    const settlements = await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
    assert.deepEqual(settlements.map((s) => s.status), ['orphaned', 'orphaned']);
    const refunds = await t.container.db.select().from(x402Refunds).where(eq(x402Refunds.payer, payer.address.toLowerCase()));
    assert.deepEqual(refunds.map((r) => [r.status, r.amountMicros]), [['pending', PRICE], ['pending', PRICE]]);
    assert.equal((await t.container.db.select().from(ledgerEntries).where(eq(ledgerEntries.txHash, settlements[0].txHash!))).length, 0);
  });

  test('a commit that fails after the payment settled keeps the settlement, a wallet refund record and an alert', async () => {
    const payer = await funded();
    const json = { body: Buffer.from('{}'), contentType: 'application/json' };
    const payment = await signedPayment(payer, await requirementsFor(COMMIT_FAILS, json));
    const res = await post(COMMIT_FAILS, json, { 'payment-signature': payment });
    assert.equal(res.status, 500);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - 1000n, 'the minimum price moved');
    const [settlement] = await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
    assert.equal(settlement?.status, 'orphaned');
    assert.equal(settlement.amountMicros, 1000n);
    const [refund] = await t.container.db.select().from(x402Refunds).where(eq(x402Refunds.settlementId, settlement.id));
    assert.equal(refund?.status, 'pending');
    assert.equal(refund.originalTxHash, settlement.txHash);
    const alerts = await t.container.db.select().from(operatorAlerts).where(eq(operatorAlerts.kind, 'x402_refund_required'));
    assert.ok(alerts.some((a) => a.resourceId === refund.id));
    const ledger = await t.container.db.select().from(ledgerEntries).where(eq(ledgerEntries.txHash, settlement.txHash!));
    assert.equal(ledger.length, 0, 'the paid call did not commit, so neither did its ledger row');
  });

  test('the facilitator down: 503 RELAYSTATION_UNAVAILABLE, nothing created, nothing moved', async () => {
    const { payer, before, status, body } = await payWhileFacilitator('down', 'Down');
    assert.equal(status, 503);
    assert.equal(body.code, 'RELAYSTATION_UNAVAILABLE');
    assert.equal(await countEnvelopes(), before);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n);
  });

  test('a settle that times out: 503, nothing done, a pending settlement and an alert (the transfer may have landed)', async () => {
    const { payer, before, status, body } = await payWhileFacilitator('slow-settle', 'Slow');
    assert.equal(status, 503);
    assert.equal(body.code, 'RELAYSTATION_UNAVAILABLE');
    assert.equal(await countEnvelopes(), before);
    const alerts = await t.container.db.select().from(operatorAlerts).where(eq(operatorAlerts.kind, 'x402_settle_unknown'));
    assert.ok(alerts.some((a) => (a.data as { payer?: string }).payer === payer.address.toLowerCase()));
    const [settlement] = await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
    assert.equal(settlement.status, 'pending', 'for the sweep to resolve on-chain');
  });

  test('funds gone between verify and settle: 402 INSUFFICIENT_BALANCE, nothing committed', async () => {
    const { before, status, body } = await payWhileFacilitator('broke-settle', 'Spent meanwhile');
    assert.equal(status, 402);
    assert.equal(body.code, 'INSUFFICIENT_BALANCE');
    assert.equal(body.priceMicros, 100_000);
    assert.equal(await countEnvelopes(), before);
  });

  test('a settle the facilitator refuses: 402, nothing done, the settlement written down as failed', async () => {
    const { payer, before, status, body } = await payWhileFacilitator('refuse-settle', 'Refused');
    assert.equal(status, 402);
    assert.equal(body.code, 'PAYMENT_INVALID');
    assert.equal(await countEnvelopes(), before);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n);
    const [settlement] = await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
    assert.equal(settlement.status, 'failed');
  });
});

describe('x402 payers: history and refunds', () => {
  async function paidEnvelope(payer: PrivateKeyAccount, title: string): Promise<{ envelopeId: string; txHash: string }> {
    const res = await post('/v1/envelopes', await createBody(title), {}, wrapFetchWithPayment(fetch, payingClient(payer)));
    assert.equal(res.status, 201, await res.clone().text());
    return { envelopeId: (await res.json()).envelopeId, txHash: decodePaymentResponseHeader(res.headers.get('payment-response')!).transaction };
  }

  test("the wallet's JWT sees the paid call in its usage, with its txHash", async () => {
    const payer = await funded();
    const { envelopeId, txHash } = await paidEnvelope(payer, 'History');
    const { token } = await signIn(t, payer);
    const usage = await t.app.inject({ url: '/v1/account/usage', headers: { authorization: `Bearer ${token}` } });
    assert.equal(usage.statusCode, 200, usage.body);
    const row = usage.json().data.find((u: { envelopeId: string }) => u.envelopeId === envelopeId);
    assert.ok(row, usage.body);
    assert.equal(row.txHash, txHash);
    assert.equal(row.amountCents, 10);
    const account = await t.app.inject({ url: '/v1/account', headers: { authorization: `Bearer ${token}` } });
    assert.equal(account.json().totalSpentCents, 10, account.body);
    const summary = await t.app.inject({ url: '/v1/account/summary', headers: { authorization: `Bearer ${token}` } });
    assert.equal(summary.json().summary.totalSpentCents, 10, summary.body);
  });

  test('an x402-paid envelope that ends unfinished gets a wallet refund record; the operator completes it', async () => {
    const payer = await funded();
    const { envelopeId, txHash } = await paidEnvelope(payer, 'Refund me');
    const cancel = await t.app.inject({ method: 'POST', url: `/ops/envelopes/${envelopeId}/cancel`, headers: bearer(OPS_TOKEN) });
    assert.equal(cancel.statusCode, 200, cancel.body);

    const list = await t.app.inject({ url: '/ops/refunds?status=pending&limit=100', headers: bearer(OPS_TOKEN) });
    assert.equal(list.statusCode, 200, list.body);
    const refund = list.json().data.find((r: { envelopeId: string }) => r.envelopeId === envelopeId);
    assert.ok(refund, list.body);
    assert.equal(refund.kind, 'wallet');
    assert.equal(refund.payer, payer.address.toLowerCase());
    assert.equal(refund.amountMicros, Number(PRICE));
    assert.equal(refund.originalTxHash, txHash);
    // Nothing is credited to a balance the payer never used, and nothing is sent on-chain by Signet.
    const [customer] = await t.container.db.select().from(customers).where(eq(customers.walletAddress, payer.address.toLowerCase()));
    assert.equal(customer.balanceMicros, 0n);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE);

    const refundTx = `0x${'ab'.repeat(32)}`;
    const done = await t.app.inject({ method: 'POST', url: `/ops/refunds/${refund.id}/complete`, headers: { ...bearer(OPS_TOKEN), 'content-type': 'application/json' }, payload: JSON.stringify({ txHash: refundTx }) });
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(done.json().status, 'completed');
    assert.equal(done.json().refundTxHash, refundTx);
    // The refund sent counts in the wallet's history: a refund row with its txHash, spending back to 0.
    const { token } = await signIn(t, payer);
    const usage = (await t.app.inject({ url: '/v1/account/usage', headers: { authorization: `Bearer ${token}` } })).json();
    assert.ok(usage.data.some((u: { direction: string; txHash: string }) => u.direction === 'refund' && u.txHash === refundTx), JSON.stringify(usage));
    assert.equal((await t.app.inject({ url: '/v1/account', headers: { authorization: `Bearer ${token}` } })).json().totalSpentCents, 0);
    const again = await t.app.inject({ method: 'POST', url: `/ops/refunds/${refund.id}/complete`, headers: { ...bearer(OPS_TOKEN), 'content-type': 'application/json' }, payload: JSON.stringify({ txHash: `0x${'cd'.repeat(32)}` }) });
    assert.equal(again.statusCode, 409, again.body);
    const completed = await t.app.inject({ url: '/ops/refunds?status=completed&limit=100', headers: bearer(OPS_TOKEN) });
    assert.ok(completed.json().data.some((r: { id: string }) => r.id === refund.id));
    const bad = await t.app.inject({ method: 'POST', url: `/ops/refunds/${refund.id}/complete`, headers: { ...bearer(OPS_TOKEN), 'content-type': 'application/json' }, payload: JSON.stringify({ txHash: 'nope' }) });
    assert.equal(bad.statusCode, 400);
  });
});

describe('wallet JWT without the balance for a call', () => {
  test('402 INSUFFICIENT_BALANCE carries PAYMENT-REQUIRED too, so the agent can pay that call on-chain', async () => {
    const wallet = await funded(0n);
    const { token } = await signIn(t, wallet);
    const res = await post('/v1/envelopes', await createBody('JWT, no balance'), { authorization: `Bearer ${token}` });
    assert.equal(res.status, 402);
    assert.equal((await res.json()).code, 'INSUFFICIENT_BALANCE');
    const header = res.headers.get('payment-required');
    assert.ok(header, 'a PAYMENT-REQUIRED header');
    const required = decodePaymentRequiredHeader(header);
    assert.equal(required.accepts[0].amount, String(PRICE));
    assert.equal(required.accepts[0].payTo.toLowerCase(), chain.payTo.toLowerCase());
  });
});

describe('a process that dies between settle and commit', () => {
  test('its settlement, recorded on its own and left `settled`, becomes a refund due after 10 minutes', async () => {
    const payer = privateKeyToAccount(generatePrivateKey()).address.toLowerCase();
    const [customer] = await t.container.db.insert(customers).values({ email: `${payer}@wallet.invalid`, name: payer, sandboxLimit: 0, walletAddress: payer }).returning();
    const row = (txHash: string, agoMinutes: number) => ({
      customerId: customer.id, payer, amountMicros: PRICE, amount: String(PRICE), network: NETWORK, asset: chain.token, txHash, status: 'settled' as const,
      createdAt: new Date(Date.now() - agoMinutes * 60_000),
    });
    const dead = `0x${'0d'.repeat(32)}`;
    const recent = `0x${'0e'.repeat(32)}`;
    await t.container.db.insert(x402Settlements).values([row(dead, 11), row(recent, 1)]);
    const sweep = t.container.x402!.service;
    assert.equal(await t.container.db.transaction((tx) => sweep.orphanStaleSettlements(tx)), 1);
    const status = async (txHash: string) => (await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.txHash, txHash)))[0].status;
    assert.equal(await status(dead), 'orphaned');
    assert.equal(await status(recent), 'settled', 'a call may still be committing');
    const [refund] = await t.container.db.select().from(x402Refunds).where(eq(x402Refunds.originalTxHash, dead));
    assert.equal(refund?.status, 'pending');
    const alerts = await t.container.db.select().from(operatorAlerts).where(eq(operatorAlerts.kind, 'x402_refund_required'));
    assert.ok(alerts.some((a) => a.resourceId === refund.id));
    assert.equal(await t.container.db.transaction((tx) => sweep.orphanStaleSettlements(tx)), 0, 'once');
  });

  test('the settlement is committed on its own, `settled`, before the call commits', { skip: !process.env.DATABASE_URL && 'holding the call at its commit while we look takes a second connection (PostgreSQL)' }, async () => {
    // The paid call's COMMIT checks a deferred foreign key against parent 42, which another connection
    // holds locked: the call waits at its commit, after the settle, while we look.
    await t.container.db.execute(sql`INSERT INTO x402_test_parent (id) VALUES (42)`);
    const pg = (await import('pg')).default;
    const holder = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await holder.connect();
    try {
      const [{ s }] = rowsOf<{ s: string }>(await t.container.db.execute(sql`SELECT current_schema() AS s`));
      await holder.query(`SET search_path TO "${s}"`);
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM x402_test_parent WHERE id = 42 FOR UPDATE');
      const payer = await funded();
      const paid = post(COMMIT_FAILS, await createBody('Apart'), {}, wrapFetchWithPayment(fetch, payingClient(payer)));
      const mine = () => t.container.db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
      let seen: string | undefined;
      // Written down as pending before the settle, `settled` once it is confirmed (up to 30 s: the chain
      // and the facilitator share a loaded CI machine).
      for (let i = 0; i < 1200 && (!seen || seen === 'pending'); i++) {
        seen = (await mine())[0]?.status;
        if (!seen || seen === 'pending') await new Promise((r) => setTimeout(r, 25));
      }
      assert.equal(seen, 'settled', 'committed on its own while the call waits at its commit');
      await holder.query('COMMIT');
      assert.equal((await paid).status, 200);
      assert.equal((await mine())[0].status, 'committed');
    } finally {
      await holder.end();
      await t.container.db.execute(sql`DELETE FROM x402_test_child`);
      await t.container.db.execute(sql`DELETE FROM x402_test_parent`);
    }
  });
});
