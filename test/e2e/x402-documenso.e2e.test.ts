/**
 * SIGNING_ENGINE=documenso with x402, on a real local chain and the Documenso stand-in: Documenso's send
 * emails the recipients and cannot be taken back, so the payment settles before it. A settle that fails
 * leaves the envelope a DRAFT at both ends, never distributed there and unpaid here.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { eq } from 'drizzle-orm';
import { envelopes } from '../../src/db/schema/index.js';
import { createTestApp, type TestApp } from '../harness.js';
import { startDocumensoStandin, type DocumensoStandin } from '../fixtures/documenso-standin.js';
import { drain, envelopeBody, newKey, samplePdf, sigField, signer } from '../fixtures/envelopes.js';
import { startChain, type Chain } from './x402-chain.js';
import { x402Env, x402Payers } from './x402-payer.js';

const SECRET = 'documenso-webhook-secret-for-tests';
let chain: Chain;
let standin: DocumensoStandin;
let t: TestApp;
let base: string;

before(async () => {
  chain = await startChain();
  standin = await startDocumensoStandin();
  t = await createTestApp({ env: x402Env(chain, { SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: standin.url, DOCUMENSO_API_KEY: standin.apiKey, DOCUMENSO_WEBHOOK_SECRET: SECRET }) });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  standin.webhook = { url: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/engine/documenso/webhook`, secret: SECRET };
});
after(async () => {
  await t?.close();
  await standin?.close();
  await chain?.close();
});

type Body = { body: Buffer; contentType: string };
const post = (url: string, mp: Body, headers: Record<string, string> = {}) =>
  fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': mp.contentType, 'idempotency-key': newKey(), ...headers }, body: new Uint8Array(mp.body) });

test('an x402 send whose settle fails is not distributed at Documenso: 402, the envelope a DRAFT; paid, it is sent once', async () => {
  const payers = x402Payers(chain);
  const payer = await payers.funded();
  const pay = async (url: string, mp: Body) => {
    const offer = await post(url, mp);
    assert.equal(offer.status, 402, await offer.text());
    return payers.sign(payer, decodePaymentRequiredHeader(offer.headers.get('payment-required')!));
  };
  const mp = envelopeBody([await samplePdf()], { title: 'Documenso draft', recipients: [signer(1)], fields: [sigField(signer(1).email)] });
  const draft = await post('/v1/envelopes/draft', mp, { 'payment-signature': await pay('/v1/envelopes/draft', mp) });
  assert.equal(draft.status, 201, await draft.clone().text());
  const { envelopeId } = await draft.json();

  const json: Body = { body: Buffer.from('{}'), contentType: 'application/json' };
  const send = `/v1/envelopes/${envelopeId}/send`;
  const header = await pay(send, json);
  chain.setFacilitatorMode('broke-settle');
  let refused: Response;
  try {
    refused = await post(send, json, { 'payment-signature': header });
  } finally {
    chain.setFacilitatorMode('normal');
  }
  assert.equal(refused.status, 402, await refused.clone().text());
  assert.equal((await refused.json()).code, 'INSUFFICIENT_BALANCE');
  assert.equal(standin.calls['envelope.distribute'], 0, 'nothing was sent at Documenso');
  const [row] = await t.container.db.select().from(envelopes).where(eq(envelopes.id, envelopeId));
  assert.equal(row.status, 'DRAFT');

  const sent = await post(send, json, { 'payment-signature': await pay(send, json) });
  assert.equal(sent.status, 200, await sent.clone().text());
  // Paid and recorded PENDING; the distribution job sends it at Documenso after the commit, once.
  assert.equal((await sent.json()).status, 'PENDING');
  await drain(t);
  assert.equal(standin.calls['envelope.distribute'], 1);
  assert.equal(await chain.balanceOf(payer.address), 1_000_000n - 1000n - 100_000n);
});
