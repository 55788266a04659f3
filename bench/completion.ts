/**
 * Completion latency: how long after the last signature GET /v1/envelopes/{id}/status says COMPLETED
 * (the seal is a job, so the server runs its worker). Per envelope (10-page PDF, two signers by
 * coordinates, the second one's field on the last page): each recipient does what the signing page
 * does in a browser (GET session, GET document, POST complete with a drawn signature); the clock starts
 * as the second recipient's POST /sign/{token}/complete is sent and stops at the first status poll
 * (one every 5 ms) that answers COMPLETED. Envelopes run one after another.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { signaturePng } from '../test/fixtures/pdfs.js';
import { authed, createAndSendBody, expectStatus, postEnvelope, textPdf, type Client } from './requests.js';
import { createCustomer, startSignet, type DbKind } from './servers.js';

export type CompletionResult = { runs: number; p50: number; p90: number; max: number };

const POLL_MS = 5;
/** Lets the jobs of the envelope before (completion emails and the like) drain: one envelope at a time. */
const PAUSE_MS = 100;
const SIGNATURE = `data:image/png;base64,${Buffer.from(signaturePng()).toString('base64')}`;

type Session = { canAct: boolean; reason: string | null; fields: { fieldId: number; type: string }[]; documentUrl: string | null };

/** Opens the signing page's data and the document, as the page does before the recipient can sign. */
async function open(base: string, token: string): Promise<Session> {
  const s = await expectStatus<Session>(await fetch(`${base}/sign/${token}/session`), 200, 'GET /sign/{token}/session');
  if (!s.canAct) throw new Error(`the recipient cannot sign: ${s.reason}`);
  const doc = await fetch(`${base}${s.documentUrl ?? `/sign/${token}/document`}`);
  await doc.arrayBuffer();
  if (doc.status !== 200) throw new Error(`GET /sign/{token}/document answered ${doc.status}`);
  // As the signing page does before the first action (outside the timed completion).
  await expectStatus(await fetch(`${base}/sign/${token}/consent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }), 200, 'POST /sign/{token}/consent');
  return s;
}

function complete(base: string, token: string, s: Session): Promise<Response> {
  return fetch(`${base}/sign/${token}/complete`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ fields: s.fields.map((f) => ({ fieldId: f.fieldId, value: null })), signature: { kind: 'drawn', image: SIGNATURE } }),
  });
}

/** One envelope sent, signed by both and sealed: the completion latency and its id. */
export async function oneEnvelope(c: Client, body: { body: Buffer; contentType: string }): Promise<{ ms: number; envelopeId: string }> {
  const env = await postEnvelope(c, body);
  const [first, last] = env.recipients.map((r) => new URL(r.signingUrl).pathname.split('/').pop()!);
  await expectStatus(await complete(c.base, first, await open(c.base, first)), 200, 'POST /sign/{token}/complete (first signer)');
  const s = await open(c.base, last);
  const started = performance.now();
  await expectStatus(await complete(c.base, last, s), 200, 'POST /sign/{token}/complete (last signer)');
  for (;;) {
    const { status } = await expectStatus<{ status: string }>(await fetch(`${c.base}/v1/envelopes/${env.envelopeId}/status`, { headers: authed(c) }), 200, 'GET status');
    if (status === 'COMPLETED') return { ms: performance.now() - started, envelopeId: env.envelopeId };
    if (performance.now() - started > 60_000) throw new Error(`envelope ${env.envelopeId} still ${status} 60 s after the last signature`);
    await sleep(POLL_MS);
  }
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

/** `runs` measured envelopes after `warmup` unmeasured ones, on a fresh `signet serve` with its worker on. */
export async function measureCompletion(kind: DbKind, databaseUrl: string | undefined, opts: { runs: number; warmup: number; logLevel: string; env?: Record<string, string> }): Promise<CompletionResult> {
  const server = await startSignet(kind, databaseUrl, { env: { LOG_LEVEL: opts.logLevel, WORKER_ENABLED: 'true', ...opts.env } });
  try {
    const c = { base: server.base, ...(await createCustomer(server.base)) };
    const body = await createAndSendBody(await textPdf(10, 'Completion'), 10, 'Completion');
    const times: number[] = [];
    for (let i = 0; i < opts.warmup + opts.runs; i++) {
      const { ms } = await oneEnvelope(c, body);
      if (i >= opts.warmup) times.push(ms);
      await sleep(PAUSE_MS);
    }
    times.sort((a, b) => a - b);
    return { runs: times.length, p50: quantile(times, 0.5), p90: quantile(times, 0.9), max: times[times.length - 1] };
  } finally {
    await server.stop();
  }
}
