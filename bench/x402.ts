/**
 * `npx tsx bench/x402.ts`: the latency x402 adds to a create-and-send (verify and settle through a
 * facilitator on a local anvil chain) against the same call paid from an API key's balance, in one run,
 * sequential requests (latency, not throughput). Uses the test chain (test/e2e/x402-chain.ts).
 *
 *   BENCH_X402_CALLS   measured calls per mode (default 30, after 3 unmeasured)
 */
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { NETWORK, TOKEN_NAME, TOKEN_VERSION, startChain } from '../test/e2e/x402-chain.js';
import { envelopeBody, newKey, samplePdf, sigField, signer } from '../test/fixtures/envelopes.js';
import { createTestApp } from '../test/harness.js';

const calls = Number(process.env.BENCH_X402_CALLS || 30);
const chain = await startChain();
const t = await createTestApp({
  creditCents: 100_000,
  env: { X402_FACILITATOR_URL: chain.facilitatorUrl, X402_NETWORK: NETWORK, X402_ASSET: chain.token, X402_PAY_TO: chain.payTo, X402_ASSET_NAME: TOKEN_NAME, X402_ASSET_VERSION: TOKEN_VERSION },
});
const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
const payer = privateKeyToAccount(generatePrivateKey());
await chain.mint(payer.address, 1_000_000_000n);
const paying = wrapFetchWithPayment(
  fetch,
  x402Client.fromConfig({ schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(payer) }], spendControls: { allowedAssets: [{ network: NETWORK, asset: chain.token }] } }),
);
const body = envelopeBody([await samplePdf()], { title: 'Bench', recipients: [signer(1)], fields: [sigField(signer(1).email)] });

async function run(label: string, send: () => Promise<Response>): Promise<{ label: string; p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < calls + 3; i++) {
    const started = performance.now();
    const res = await send();
    if (res.status !== 201) throw new Error(`${label}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    if (i >= 3) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return { label, p50: at(0.5), p99: at(0.99) };
}

const post = (headers: Record<string, string>, doFetch: typeof fetch = fetch) =>
  doFetch(`${base}/v1/envelopes`, { method: 'POST', headers: { 'content-type': body.contentType, 'idempotency-key': newKey(), ...headers }, body: new Uint8Array(body.body) });

try {
  const key = await run('API key (balance)', () => post({ authorization: `Bearer ${t.customer.apiKey}` }));
  // wrapFetchWithPayment sends the request, reads the 402, signs, and sends it again: both legs count.
  const paid = await run('x402 (402, sign, verify + settle on anvil)', () => post({}, paying));
  console.log(`x402 latency bench: ${calls} sequential create-and-sends per mode, 1-page PDF, PGlite${process.env.DATABASE_URL ? '/PostgreSQL' : ''}`);
  for (const r of [key, paid]) console.log(`${r.label.padEnd(45)} p50 ${r.p50.toFixed(1).padStart(7)} ms   p99 ${r.p99.toFixed(1).padStart(7)} ms`);
  console.log(`${'added by x402'.padEnd(45)} p50 ${(paid.p50 - key.p50).toFixed(1).padStart(7)} ms   p99 ${(paid.p99 - key.p99).toFixed(1).padStart(7)} ms`);
} finally {
  await t.close();
  await chain.close();
}
