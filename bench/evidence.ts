/**
 * What a user waits on around a sealed file:
 * - verify: POST /v1/documents/verify of a 10-page PDF this server sealed (raw application/pdf, with an
 *   API key), in turns with the verify floor (bench/floors/read.ts: the file's hashes, one RSA
 *   verification, one SELECT);
 * - seal levels: completion latency (bench/completion.ts) at PAdES B-B, B-T and B-LT, sealed with a test
 *   CA's leaf against the local OpenSSL TSA, OCSP responder and CRLs of test/fixtures/pki.ts (each TSA
 *   or OCSP answer is an `openssl` process, some 10-30 ms here; a public TSA is a network round trip).
 *   B-B is the baseline: the ratios say what the timestamp and the revocation data add.
 */
import { PKI_PASS, startTestPki } from '../test/fixtures/pki.js';
import { measureCompletion, oneEnvelope, type CompletionResult } from './completion.js';
import { measure, measurePaired, type MeasureOptions, type Measured, type Row } from './load.js';
import { authed, createAndSendBody, expectStatus, textPdf } from './requests.js';
import { DB_LABEL, createCustomer, startSignet, type DbKind } from './servers.js';

/** The verify floor's row and the verify row: a fresh server (worker on, to seal the file first), the same sealed file every request. */
export async function verifyRows(kind: DbKind, databaseUrl: string | undefined, floor: Measured & { base: string }, opts: MeasureOptions & { rounds: number; logLevel: string }): Promise<Row[]> {
  const server = await startSignet(kind, databaseUrl, { env: { LOG_LEVEL: opts.logLevel, WORKER_ENABLED: 'true' } });
  try {
    const c = { base: server.base, ...(await createCustomer(server.base)) };
    const { envelopeId } = await oneEnvelope(c, await createAndSendBody(await textPdf(10, 'Verify'), 10, 'Verify'));
    const res = await fetch(`${c.base}/v1/envelopes/${envelopeId}/download`, { headers: authed(c) });
    if (res.status !== 200) throw new Error(`GET /v1/envelopes/{id}/download answered ${res.status}: ${await res.text()}`);
    const sealed = Buffer.from(await res.arrayBuffer());
    const req = { url: `${c.base}/v1/documents/verify`, method: 'POST' as const, body: sealed, headers: authed(c, { 'content-type': 'application/pdf' }) };
    const probe = await expectStatus<{ status: string }>(await fetch(req.url, { method: 'POST', headers: req.headers, body: new Uint8Array(sealed) }), 200, 'POST /v1/documents/verify');
    if (probe.status !== 'SEALED') throw new Error(`POST /v1/documents/verify of the sealed file says ${probe.status}`);
    await expectStatus(await fetch(`${floor.base}/floor/sealed`, { method: 'POST', headers: { 'content-type': 'application/pdf' }, body: new Uint8Array(sealed) }), 200, 'verify floor registration');
    const floorNow = { ...floor, req: { ...floor.req, body: sealed } };
    const floorRow = await measure(floor.name, floor.group, floorNow.req, { ...opts, pid: floor.pid });
    const name = `Signet POST /v1/documents/verify, sealed 10 pages, ${(sealed.length / 1024).toFixed(0)} KB (${DB_LABEL[kind]})`;
    return [floorRow, await measurePaired({ name, group: 'verify', req, pid: server.pid }, { ...floorNow, row: floorRow }, opts)];
  } finally {
    await server.stop();
  }
}

export type SealLevelResult = { level: 'B-B' | 'B-T' | 'B-LT'; completion: CompletionResult; tsaRequests: number; ocspRequests: number; crlRequests: number };

/** Completion latency at B-B, B-T and B-LT, one fresh server each, with the same signer certificate. */
export async function measureSealLevels(kind: DbKind, databaseUrl: string | undefined, opts: { runs: number; logLevel: string }): Promise<SealLevelResult[]> {
  const pki = await startTestPki();
  try {
    const out: SealLevelResult[] = [];
    for (const level of ['B-B', 'B-T', 'B-LT'] as const) {
      const before = { tsa: pki.tsa.requests, ocsp: pki.ocspRequests, crl: pki.crlRequests };
      process.stderr.write(`  seal at ${level}: ${opts.runs} envelopes of 10 pages on ${DB_LABEL[kind]}\n`);
      const env: Record<string, string> = { SIGNING_CERT_P12_PATH: pki.signerP12, SIGNING_CERT_PASSPHRASE: PKI_PASS, SIGNING_PADES_LEVEL: level, ...(level === 'B-B' ? {} : { SIGNING_TSA_URL: pki.tsaUrl }) };
      const completion = await measureCompletion(kind, databaseUrl, { runs: opts.runs, warmup: 2, logLevel: opts.logLevel, env });
      out.push({ level, completion, tsaRequests: pki.tsa.requests - before.tsa, ocspRequests: pki.ocspRequests - before.ocsp, crlRequests: pki.crlRequests - before.crl });
    }
    return out;
  } finally {
    await pki.close();
  }
}

export function formatSealLevels(kind: DbKind, results: SealLevelResult[]): string[] {
  const base = results.find((r) => r.level === 'B-B')?.completion;
  return results.map((r) => {
    const c = r.completion;
    const vs = base && r.level !== 'B-B' ? `, ${(c.p50 / base.p50).toFixed(2)}x B-B's p50` : ' (baseline)';
    const peers = r.level === 'B-B' ? '' : `; TSA ${r.tsaRequests}, OCSP ${r.ocspRequests}, CRL ${r.crlRequests} requests`;
    return `  ${DB_LABEL[kind].padEnd(10)} ${r.level.padEnd(5)} ${c.runs} envelopes: p50 ${c.p50.toFixed(0)} ms, p90 ${c.p90.toFixed(0)} ms, max ${c.max.toFixed(0)} ms${vs}${peers}`;
  });
}
