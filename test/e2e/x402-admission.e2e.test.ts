/**
 * What an x402 payment gets before it is paid, and what it pays for, on a real local chain: the
 * facilitator verifies it before anything is done for its payer; the price is what the call costs; the
 * payment is for this call only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { x402Client } from '@x402/fetch';
import { eq } from 'drizzle-orm';
import { auditLog, customers } from '../../src/db/schema/index.js';
import { createTestApp, type TestApp } from '../harness.js';
import { envelopeBody, multipart, newKey, samplePdf, sigField, signer } from '../fixtures/envelopes.js';
import { signIn } from '../fixtures/wallet.js';
import { startChain, type Chain } from './x402-chain.js';
import { x402Env, x402Payers } from './x402-payer.js';

let chain: Chain;
let payers: ReturnType<typeof x402Payers>;
let t: TestApp;
let base: string;

before(async () => {
  chain = await startChain();
  payers = x402Payers(chain);
  t = await createTestApp({ env: x402Env(chain) });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
after(async () => {
  await t?.close();
  await chain?.close();
});

type Body = { body: Buffer; contentType: string };
const post = (url: string, mp: Body, headers: Record<string, string> = {}, at = base) =>
  fetch(`${at}${url}`, { method: 'POST', headers: { 'content-type': mp.contentType, 'idempotency-key': newKey(), ...headers }, body: new Uint8Array(mp.body) });

async function offer(url: string, mp: Body): Promise<PaymentRequired> {
  const res = await post(url, mp);
  assert.equal(res.status, 402, await res.text());
  return decodePaymentRequiredHeader(res.headers.get('payment-required')!);
}

const createBody = async (payload: Record<string, unknown> = {}) => envelopeBody([await samplePdf()], { title: 'Paid', recipients: [signer(1)], fields: [sigField(signer(1).email)], ...payload });
/** An upload that is no PDF: parsing it would answer 400 INVALID_PDF. */
const notAPdf = () => multipart([{ name: 'pdf', value: Buffer.from('not a pdf at all'), filename: 'x.pdf', contentType: 'application/pdf' }, { name: 'payload', value: JSON.stringify({ title: 'Junk', recipients: [signer(1)], fields: [sigField(signer(1).email)] }) }]);

const customerOf = async (address: string) => (await t.container.db.select().from(customers).where(eq(customers.walletAddress, address.toLowerCase())))[0];

describe('verified before any work', () => {
  test('an authorization from an empty wallet: 402 before the upload is parsed; no customer, no audit row', async () => {
    const required = await offer('/v1/envelopes', await createBody());
    const empty = await payers.funded(0n);
    const signUps = async () => (await t.container.db.select().from(auditLog).where(eq(auditLog.action, 'x402.sign_up'))).length;
    const before = await signUps();
    const res = await post('/v1/envelopes', notAPdf(), { 'payment-signature': await payers.sign(empty, required) });
    const body = await res.json();
    assert.equal(res.status, 402, JSON.stringify(body));
    assert.equal(body.code, 'INSUFFICIENT_BALANCE');
    assert.equal(await customerOf(empty.address), undefined, 'no customer for a payment that did not verify');
    assert.equal(await signUps(), before);
  });

  test('the wallet customer is made once a payment verified: the upload is then parsed (400 INVALID_PDF, nothing charged)', async () => {
    const required = await offer('/v1/envelopes', await createBody());
    const payer = await payers.funded();
    const res = await post('/v1/envelopes', notAPdf(), { 'payment-signature': await payers.sign(payer, required) });
    assert.equal(res.status, 400, await res.clone().text());
    assert.equal((await res.json()).code, 'INVALID_PDF');
    assert.ok(await customerOf(payer.address));
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n, 'refused before the settle');
  });

  test('until verified, x402 callers count against their IP\'s rate limit, not a fresh one per wallet', async () => {
    const limited = await createTestApp({ env: x402Env(chain, { RATE_LIMIT_MAX: '3' }) });
    try {
      const at = await limited.app.listen({ port: 0, host: '127.0.0.1' });
      // The same terms as this app's (same PUBLIC_URL and chain), asked of the app without the limit.
      const required = await offer('/v1/envelopes', await createBody());
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const wallet = await payers.funded(0n);
        statuses.push((await post('/v1/envelopes', notAPdf(), { 'payment-signature': await payers.sign(wallet, required) }, at)).status);
      }
      assert.deepEqual(statuses, [402, 402, 402, 429, 429, 429]);
    } finally {
      await limited.close();
    }
  });
});

describe('a call costs what it does: a draft is not charged the price of a send', () => {
  const MIN = '1000'; // X402_MIN_PRICE: USD 0.001
  const json = (body: unknown): Body => ({ body: Buffer.from(JSON.stringify(body)), contentType: 'application/json' });

  test('POST /v1/envelopes with draft: true asks X402_MIN_PRICE, and that is all that moves; without it, the create price', async () => {
    assert.equal((await offer('/v1/envelopes', await createBody())).accepts[0].amount, '100000');
    const draft = await createBody({ draft: true });
    const required = await offer('/v1/envelopes', draft);
    assert.equal(required.accepts[0].amount, MIN);
    const payer = await payers.funded();
    const res = await post('/v1/envelopes', draft, { 'payment-signature': await payers.sign(payer, required) });
    assert.equal(res.status, 201, await res.clone().text());
    assert.equal((await res.json()).status, 'DRAFT');
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - 1000n);
  });

  test('from-template (both routes) with sendImmediately: false asks X402_MIN_PRICE; a draft is what it makes', async () => {
    const payer = await payers.funded();
    // The payer's own template, made with its wallet JWT (free).
    const { token } = await signIn(t, payer);
    const made = await post('/v1/templates', multipart([{ name: 'file', value: await samplePdf(), filename: 't.pdf' }, { name: 'payload', value: JSON.stringify({ title: 'T', recipients: [signer(1)], fields: [sigField(signer(1).email)] }) }]), { authorization: `Bearer ${token}` });
    assert.equal(made.status, 201, await made.clone().text());
    const { templateId } = await made.json();
    const mapping = { recipients: [{ id: 1, email: 'person@example.com', name: 'Person' }] };
    assert.equal((await offer(`/v1/templates/${templateId}/from-template`, json(mapping))).accepts[0].amount, '100000');
    for (const [url, body] of [
      [`/v1/templates/${templateId}/from-template`, { ...mapping, sendImmediately: false }],
      ['/v1/envelopes/from-template', { templateId, ...mapping, sendImmediately: false }],
    ] as const) {
      const required = await offer(url, json(body));
      assert.equal(required.accepts[0].amount, MIN, url);
      const res = await post(url, json(body), { 'payment-signature': await payers.sign(payer, required) });
      assert.equal(res.status, 201, await res.clone().text());
      assert.equal((await res.json()).status, 'DRAFT');
    }
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n - 2000n);
  });

  test('MCP create_envelope_from_template with sendImmediately: false asks X402_MIN_PRICE', async () => {
    const call = (sendImmediately: boolean) => ({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'create_envelope_from_template', arguments: { templateId: '00000000-0000-4000-8000-000000000000', recipients: [{ id: 1, email: 'p@example.com', name: 'P' }], sendImmediately, idempotencyKey: newKey() } },
    });
    const ask = async (sendImmediately: boolean) => {
      const res = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(call(sendImmediately)) });
      assert.equal(res.status, 402, await res.clone().text());
      return decodePaymentRequiredHeader(res.headers.get('payment-required')!).accepts[0].amount;
    };
    assert.equal(await ask(true), '100000');
    assert.equal(await ask(false), MIN);
  });
});

describe('x402 and X-Service-Test-Mode', () => {
  test('a free test send needs an account: a payment with the header is refused (400 X402_NOT_APPLICABLE) before anything is paid, and no payment is offered for it (401)', async () => {
    const mp = await createBody();
    const anonymous = await post('/v1/envelopes', mp, { 'x-service-test-mode': 'true' });
    assert.equal(anonymous.status, 401, await anonymous.clone().text());
    assert.equal((await anonymous.json()).code, 'UNAUTHORIZED');
    assert.equal(anonymous.headers.get('payment-required'), null);

    const payer = await payers.funded();
    const res = await post('/v1/envelopes', mp, { 'payment-signature': await payers.sign(payer, await offer('/v1/envelopes', mp)), 'x-service-test-mode': 'true' });
    const body = await res.json();
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(body.code, 'X402_NOT_APPLICABLE');
    assert.equal(await chain.balanceOf(payer.address), 1_000_000n);
    assert.equal(await customerOf(payer.address), undefined);
  });
});

describe('an offer to pay is not a final answer', () => {
  test("a wallet JWT's 402 INSUFFICIENT_BALANCE with PAYMENT-REQUIRED is not stored: the offer is paid under the same Idempotency-Key", async () => {
    const wallet = await payers.funded();
    const { token } = await signIn(t, wallet);
    const mp = await createBody();
    const key = newKey();
    const refused = await post('/v1/envelopes', mp, { authorization: `Bearer ${token}`, 'idempotency-key': key });
    assert.equal(refused.status, 402);
    assert.equal((await refused.json()).code, 'INSUFFICIENT_BALANCE');
    const required = decodePaymentRequiredHeader(refused.headers.get('payment-required')!);
    const paid = await post('/v1/envelopes', mp, { 'idempotency-key': key, 'payment-signature': await payers.sign(wallet, required) });
    assert.equal(paid.status, 201, await paid.clone().text());
    assert.equal(paid.headers.get('idempotent-replayed'), null);
    assert.ok(paid.headers.get('payment-response'));
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n - 100_000n);
  });
});

describe('a payment pays the call it was signed for', () => {
  test('a payment signed for POST /v1/envelopes does not pay a send of the same price: 402 PAYMENT_INVALID resource_mismatch, nothing moved', async () => {
    const payer = await payers.funded();
    const mp = await createBody();
    const draftRequired = await offer('/v1/envelopes/draft', mp);
    const draft = await post('/v1/envelopes/draft', mp, { 'payment-signature': await payers.sign(payer, draftRequired) });
    assert.equal(draft.status, 201, await draft.clone().text());
    const { envelopeId } = await draft.json();
    const before = await chain.balanceOf(payer.address);

    const json: Body = { body: Buffer.from('{}'), contentType: 'application/json' };
    const forCreate = await payers.sign(payer, await offer('/v1/envelopes', mp));
    const res = await post(`/v1/envelopes/${envelopeId}/send`, json, { 'payment-signature': forCreate });
    const body = await res.json();
    assert.equal(res.status, 402, JSON.stringify(body));
    assert.equal(body.code, 'PAYMENT_INVALID');
    assert.equal(body.reason, 'resource_mismatch');
    assert.equal(await chain.balanceOf(payer.address), before);

    const forSend = await payers.sign(payer, await offer(`/v1/envelopes/${envelopeId}/send`, json));
    const sent = await post(`/v1/envelopes/${envelopeId}/send`, json, { 'payment-signature': forSend });
    assert.equal(sent.status, 200, await sent.clone().text());
    assert.equal(await chain.balanceOf(payer.address), before - 100_000n);
  });
});

describe('a payment in another asset or on another network', () => {
  for (const [what, tamper] of [
    ['another asset', (r: PaymentRequired['accepts'][number]) => ({ ...r, asset: '0x1111111111111111111111111111111111111111' })],
    ['another network', (r: PaymentRequired['accepts'][number]) => ({ ...r, network: 'eip155:1' as const })],
  ] as const) {
    test(`${what}: 402 PAYMENT_INVALID (not 401 INVALID_SIGNATURE: its signature is good, for other terms), nothing moved`, async () => {
      const mp = await createBody();
      const required = await offer('/v1/envelopes', mp);
      const accepts = [tamper(required.accepts[0])];
      const payer = await payers.funded();
      // A client that may pay in those terms (the test's own spend controls allow only the test token).
      const client = x402Client.fromConfig({ schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(payer) }], spendControls: { allowedAssets: [{ network: accepts[0].network, asset: accepts[0].asset }] } });
      const header = encodePaymentSignatureHeader(await client.createPaymentPayload({ ...required, accepts }));
      const res = await post('/v1/envelopes', mp, { 'payment-signature': header });
      const body = await res.json();
      assert.equal(res.status, 402, JSON.stringify(body));
      assert.equal(body.code, 'PAYMENT_INVALID');
      assert.equal(body.reason, what === 'another asset' ? 'asset_mismatch' : 'network_mismatch');
      assert.deepEqual([body.network, body.asset], [required.accepts[0].network, required.accepts[0].asset], 'with the terms this server takes');
      assert.equal(await chain.balanceOf(payer.address), 1_000_000n);
    });
  }
});
