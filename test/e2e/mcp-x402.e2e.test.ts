/**
 * A tools/call paid by x402 on a real local chain (anvil, an EIP-3009 token, @x402/evm's facilitator over
 * HTTP), made by the MCP SDK's own client whose fetch is @x402/fetch's paying wrapper, as an agent with
 * a wallet and no account does it. Prices are asset amounts (6 decimals: 1 unit = 1 micro).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { eq } from 'drizzle-orm';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { auditLog, customers, envelopes, ledgerEntries, x402Refunds, x402Settlements } from '../../src/db/schema/index.js';
import { createTestApp, type TestApp } from '../harness.js';
import { newKey, samplePdf, sigField, signer } from '../fixtures/envelopes.js';
import { NETWORK, TOKEN_NAME, TOKEN_VERSION, startChain, type Chain } from './x402-chain.js';

const PRICE = 100_000n; // create_envelope: USD 0.10
const MIN_PRICE = 1_000n; // X402_MIN_PRICE default: USD 0.001
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };

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
      X402_SETTLE_TIMEOUT_MS: '5000',
    },
  });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});

after(async () => {
  await t?.close();
  await chain?.close();
});

async function funded(amount = 1_000_000n): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey());
  await chain.mint(account.address, amount);
  return account;
}

function payingClient(account: PrivateKeyAccount): x402Client {
  return x402Client.fromConfig({
    schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(account) }],
    spendControls: { allowedAssets: [{ network: NETWORK, asset: chain.token }] },
  });
}

const toolCall = (name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } });
const post = (body: unknown, headers: Record<string, string> = {}) => fetch(`${base}/mcp`, { method: 'POST', headers: { ...HEADERS, ...headers }, body: JSON.stringify(body) });

async function createArgs(title: string) {
  return { pdfBase64: Buffer.from(await samplePdf()).toString('base64'), title, recipients: [signer(1)], fields: [sigField(signer(1).email)], idempotencyKey: newKey() };
}

/** The payment a 402 for this call asks for, signed by `payer`. */
async function paymentFor(payer: PrivateKeyAccount, body: unknown): Promise<{ header: string; required: PaymentRequired }> {
  const res = await post(body);
  assert.equal(res.status, 402, await res.clone().text());
  const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
  return { header: encodePaymentSignatureHeader(await payingClient(payer).createPaymentPayload(required)), required };
}

describe('MCP tools/call paid by x402 on a local chain', () => {
  test('unpaid: 402 with PAYMENT-REQUIRED for the tool\'s price; an unpriced mutating tool asks X402_MIN_PRICE', async () => {
    const res = await post(toolCall('create_envelope', await createArgs('Unpaid')));
    assert.equal(res.status, 402);
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    assert.equal(required.x402Version, 2);
    assert.equal(required.accepts[0].amount, PRICE.toString());
    assert.equal(required.accepts[0].payTo.toLowerCase(), chain.payTo.toLowerCase());
    assert.equal(required.resource.url, 'http://signet.test/mcp');
    assert.match(required.resource.description ?? '', /create_envelope/);
    const body = await res.json();
    assert.deepEqual([body.code, body.priceUsd], ['PAYMENT_REQUIRED', '0.10']);

    const cancel = await post(toolCall('cancel_envelope', { envelopeId: '00000000-0000-4000-8000-000000000000' }));
    assert.equal(cancel.status, 402);
    assert.equal(decodePaymentRequiredHeader(cancel.headers.get('payment-required')!).accepts[0].amount, MIN_PRICE.toString());
  });

  test('the SDK client with a paying fetch: discovers without credentials, pays create_envelope, answered with PAYMENT-RESPONSE; exactly the price moved', async () => {
    const payer = await funded();
    const before = { payer: await chain.balanceOf(payer.address), payTo: await chain.balanceOf(chain.payTo) };
    const answers: Response[] = [];
    const paying = wrapFetchWithPayment(fetch, payingClient(payer));
    const recording: typeof fetch = async (input, init) => {
      const res = await paying(input, init);
      answers.push(res);
      return res;
    };
    const client = new Client({ name: 'paying-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { fetch: recording }));
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((x) => x.name === 'create_envelope'));
      assert.equal(await chain.balanceOf(payer.address), before.payer, 'discovery is free');

      const result = await client.callTool({ name: 'create_envelope', arguments: await createArgs('Paid over MCP') });
      assert.ok(!result.isError, JSON.stringify(result));
      const envelope = result.structuredContent as { envelopeId: string; status: string };
      assert.equal(envelope.status, 'PENDING');

      const answer = answers.at(-1)!;
      assert.equal(answer.status, 200);
      const receipt = decodePaymentResponseHeader(answer.headers.get('payment-response')!);
      assert.equal(receipt.success, true);
      assert.match(receipt.transaction, /^0x[0-9a-f]{64}$/);
      assert.equal(await chain.balanceOf(payer.address), before.payer - PRICE);
      assert.equal(await chain.balanceOf(chain.payTo), before.payTo + PRICE);

      const [customer] = await t.container.db.select().from(customers).where(eq(customers.walletAddress, payer.address.toLowerCase()));
      assert.ok(customer, 'the payment made the customer');
      const ledger = await t.container.db.select().from(ledgerEntries).where(eq(ledgerEntries.customerId, customer.id));
      assert.deepEqual(ledger.map((l) => [l.amountMicros, l.txHash, l.envelopeId, l.operation]), [[PRICE, receipt.transaction, envelope.envelopeId, 'envelope_create']]);
      const audit = await t.container.db.select().from(auditLog).where(eq(auditLog.customerId, customer.id));
      assert.deepEqual(audit.map((a) => [a.action, a.actorType]).sort(), [['envelope.create', 'x402'], ['x402.sign_up', 'x402']]);
    } finally {
      await client.close();
    }
  });

  test('a retry under the same idempotencyKey with a fresh payment replays the answer and settles nothing', async () => {
    const payer = await funded();
    const call = toolCall('create_envelope', await createArgs('Retry'));
    const first = await post(call, { 'payment-signature': (await paymentFor(payer, call)).header });
    assert.equal(first.status, 200);
    assert.ok(first.headers.get('payment-response'));
    const second = await post(call, { 'payment-signature': (await paymentFor(payer, call)).header });
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('payment-response'), null, 'nothing settled');
    const [a, b] = [(await first.json()).result, (await second.json()).result];
    assert.equal(b.structuredContent.envelopeId, a.structuredContent.envelopeId);
    assert.equal(b._meta?.idempotentReplayed, true);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE);
  });

  test('a tool that fails after its payment settled: ENVELOPE_NOT_FOUND as an isError result, the payment recorded and refunded', async () => {
    const payer = await funded();
    const call = toolCall('send_envelope', { envelopeId: '00000000-0000-4000-8000-000000000000', idempotencyKey: newKey() });
    const { header, required } = await paymentFor(payer, call);
    assert.equal(required.accepts[0].amount, PRICE.toString(), 'send_envelope costs USD 0.10');
    const res = await post(call, { 'payment-signature': header });
    assert.equal(res.status, 200);
    const { result } = await res.json();
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent.code, 'ENVELOPE_NOT_FOUND');
    assert.equal(res.headers.get('payment-response'), null);
    // The settle runs before the tool's transaction (none is held open across it): the money moved, and comes back.
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE);
    const [settlement] = await t.container.db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
    assert.equal(settlement.status, 'orphaned');
    const [refund] = await t.container.db.select().from(x402Refunds).where(eq(x402Refunds.settlementId, settlement.id));
    assert.equal(refund?.amountMicros, PRICE);
  });

  test('x402 pays one mutating tools/call: a read, or a batch of calls, is X402_NOT_APPLICABLE and moves nothing', async () => {
    const payer = await funded();
    const call = toolCall('create_envelope', await createArgs('Not for reads'));
    const { header } = await paymentFor(payer, call);
    const read = await post(toolCall('get_envelope_status', { envelopeId: '00000000-0000-4000-8000-000000000000' }), { 'payment-signature': header });
    assert.equal(read.status, 400);
    assert.equal((await read.json()).code, 'X402_NOT_APPLICABLE');
    const batch = await post([call, { ...toolCall('create_envelope', await createArgs('Second')), id: 8 }], { 'payment-signature': header });
    assert.equal(batch.status, 400);
    assert.equal((await batch.json()).code, 'X402_NOT_APPLICABLE');
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n);
    const n = (await t.container.db.select().from(envelopes)).length;
    // The same payment still pays the call it was signed for.
    const paid = await post(call, { 'payment-signature': header });
    assert.equal(paid.status, 200);
    assert.equal((await t.container.db.select().from(envelopes)).length, n + 1);
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE);
  });
});
