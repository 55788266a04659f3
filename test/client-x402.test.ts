import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { wrapFetchWithPayment } from '@x402/fetch';
import { Signet } from '../client/src/index.js';
import { samplePdf, sigField, signer } from './fixtures/envelopes.js';
import { startChain, type Chain } from './e2e/x402-chain.js';
import { x402Env, x402Payers } from './e2e/x402-payer.js';
import { createTestApp, type TestApp } from './harness.js';

// @signet/client with @x402/fetch as its fetch: no account, no key, one payment per call on a local chain.
const PRICE = 100_000n; // POST /v1/envelopes: USD 0.10 in the test token's units
let chain: Chain;
let t: TestApp;
let baseUrl: string;

before(async () => {
  chain = await startChain();
  t = await createTestApp({ env: x402Env(chain) });
  baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
after(async () => {
  await t?.close();
  await chain?.close();
});

test('a client whose fetch is wrapFetchWithPayment creates an envelope, paying exactly the price once', async () => {
  const payers = x402Payers(chain);
  const wallet = await payers.funded();
  const signet = new Signet({ baseUrl, fetch: wrapFetchWithPayment(fetch, payers.client(wallet)) });
  const before = await chain.balanceOf(wallet.address);
  const env = await signet.envelopes.create({ file: await samplePdf(), title: 'Paid with x402', recipients: [{ email: signer(1).email, name: signer(1).name, role: 'SIGNER' }], fields: [sigField(signer(1).email) as never] });
  assert.equal(env.status, 'PENDING');
  assert.equal(env.title, 'Paid with x402');
  assert.equal(await chain.balanceOf(wallet.address), before - PRICE);
});
