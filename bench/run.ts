/**
 * `npm run bench`: throughput and latency of an authenticated Signet route against a bare Fastify
 * route measured in the same run on the same machine, plus the idle memory of a fresh server.
 *
 *   BENCH_DURATION     seconds per measured scenario (default 10)
 *   BENCH_CONNECTIONS  concurrent connections (default 20)
 *   BENCH_WARMUP       seconds of unmeasured load before each scenario (default 2)
 *   BENCH_DB           pglite | postgres | both (default: postgres when DATABASE_URL is set, else pglite)
 *   DATABASE_URL       the PostgreSQL server; each scenario uses a fresh schema and drops it after
 *   BENCH_ONLY         mcp: only the request scenarios (bare, account, REST against MCP status), no RSS, PDF or webhook runs
 *
 * Absolute figures depend on the machine; the ratio to the bare route is what to compare across runs.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import autocannon from 'autocannon';
import { measureIdleRss, serveCommand } from './idle-rss.js';
import { benchPdf, formatPdfRows } from './pdf.js';
import { bigPdf, measureUploadRss } from './upload-rss.js';
import { benchWebhooks, formatWebhookRows } from './webhooks.js';
import { mcpServed, mcpStatusRequests } from './mcp.js';
import { PDF } from '@libpdf/core';
import { DB_LABEL, startBare, startSignet, type DbKind, type Target } from './targets.js';

/** The create-and-send request: a 1-page PDF and two signers with fields by coordinates. */
async function createAndSendBody(): Promise<{ body: Buffer; contentType: string }> {
  const pdf = PDF.create();
  pdf.addPage({ size: 'letter' }).drawText('Bench agreement', { x: 72, y: 700, size: 14 });
  const form = new FormData();
  form.append('pdf', new Blob([Buffer.from(await pdf.save())], { type: 'application/pdf' }), 'bench.pdf');
  const field = (email: string, y: number) => ({ type: 'SIGNATURE', recipientEmail: email, page: 1, positionX: 10, positionY: y, width: 30, height: 6 });
  form.append(
    'payload',
    JSON.stringify({
      title: 'Bench',
      recipients: [
        { email: 'a@example.com', name: 'A', role: 'SIGNER' },
        { email: 'b@example.com', name: 'B', role: 'SIGNER' },
      ],
      fields: [field('a@example.com', 70), field('b@example.com', 80)],
    }),
  );
  const res = new Response(form);
  return { body: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get('content-type')! };
}

function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

function dbKinds(databaseUrl: string | undefined): DbKind[] {
  const wanted = process.env.BENCH_DB || (databaseUrl ? 'postgres' : 'pglite');
  const kinds: DbKind[] = wanted === 'both' ? ['pglite', 'postgres'] : wanted === 'pglite' || wanted === 'postgres' ? [wanted] : [];
  if (!kinds.length) throw new Error(`BENCH_DB must be pglite, postgres or both, got "${wanted}"`);
  if (kinds.includes('postgres') && !databaseUrl) throw new Error(`BENCH_DB=${wanted} needs DATABASE_URL`);
  return kinds;
}

type Row = { name: string; rps: number; p50: number; p99: number; requests: number; failures: number };

const duration = positiveNumber('BENCH_DURATION', 10);
const connections = Math.round(positiveNumber('BENCH_CONNECTIONS', 20));
const warmup = positiveNumber('BENCH_WARMUP', 2);
const databaseUrl = process.env.DATABASE_URL || undefined;
const kinds = dbKinds(databaseUrl);
const only = process.env.BENCH_ONLY || undefined;
if (only !== undefined && only !== 'mcp') throw new Error(`BENCH_ONLY must be mcp or unset, got "${only}"`);

/**
 * autocannon runs in a worker thread so the load generator does not share the event loop of the
 * servers it measures (they live in this process's main thread).
 */
type Request = { method?: 'GET' | 'POST'; body?: Buffer | string; headers?: Record<string, string> };

async function load(url: string, req: Request, seconds: number): Promise<autocannon.Result> {
  // A text body (JSON-RPC) crosses to the worker thread as it is; the same body every request.
  if (!req.body || typeof req.body === 'string') return autocannon({ url, method: req.method ?? 'GET', body: req.body, headers: req.headers, connections, duration: seconds, workers: 1 });
  // Uploads run from the main thread: a binary body does not cross to a worker thread intact, and
  // each request needs its own Idempotency-Key (a function, which cannot cross either).
  return autocannon({
    url,
    connections,
    duration: seconds,
    requests: [{ method: req.method, body: req.body, setupRequest: (r) => ({ ...r, headers: { ...req.headers, 'idempotency-key': randomUUID() } }) }],
  });
}

async function measure(name: string, target: Target, req: Request = {}): Promise<Row> {
  process.stderr.write(`  ${name}: warming up ${warmup} s, measuring ${duration} s\n`);
  await load(target.url, req, warmup);
  const r = await load(target.url, req, duration);
  return {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    failures: r.non2xx + r.errors + r.timeouts,
  };
}

/** autocannon records whole milliseconds; 0 means under one. */
const ms = (v: number) => (v < 1 ? '<1' : v.toFixed(0));

function printTable(rows: Row[], bare: Row): void {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx/errors', 'vs bare'];
  const body = rows.map((r) => [
    r.name,
    r.rps.toFixed(0),
    ms(r.p50),
    ms(r.p99),
    String(r.requests),
    String(r.failures),
    r === bare ? '1.000' : (r.rps / bare.rps).toFixed(3),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const b of body) console.log(line(b));
}

async function main(): Promise<void> {
  console.log(`Signet bench: Node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'CPU'}, ${connections} connections, ${duration} s per scenario`);
  // Other work on the machine skews every figure; the load average makes that visible in the output.
  console.log(`Load average before the run: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const rows: Row[] = [];
  const ratios: string[] = [];

  const bareTarget = await startBare();
  let bare: Row;
  try {
    bare = await measure('bare Fastify GET /bare', bareTarget);
    rows.push(bare);
  } finally {
    await bareTarget.close();
  }

  for (const kind of kinds) {
    const signet = await startSignet(kind, databaseUrl);
    try {
      const auth = { authorization: `Bearer ${signet.apiKey}` };
      rows.push(await measure(`Signet GET /v1/account (${DB_LABEL[kind]})`, signet, { headers: auth }));
      if (await mcpServed(signet)) {
        const { rest, mcp } = await mcpStatusRequests(signet);
        const restRow = await measure(`REST GET /v1/envelopes/{id}/status (${DB_LABEL[kind]})`, { url: rest.url, close: async () => {} }, rest);
        const mcpRow = await measure(`MCP tools/call get_envelope_status (${DB_LABEL[kind]})`, { url: mcp.url, close: async () => {} }, mcp);
        rows.push(restRow, mcpRow);
        const ratio = mcpRow.rps / restRow.rps;
        ratios.push(`  ${DB_LABEL[kind].padEnd(10)} MCP ${mcpRow.rps.toFixed(0)} req/s vs REST ${restRow.rps.toFixed(0)} req/s: ${ratio.toFixed(3)} (goal >= 0.5: ${ratio >= 0.5 ? 'met' : 'NOT met'})`);
      } else {
        ratios.push(`  ${DB_LABEL[kind].padEnd(10)} POST /mcp is not served (404): no MCP figures`);
      }
      if (only === 'mcp') continue;
      const upload = await createAndSendBody();
      rows.push(
        await measure(`Signet POST /v1/envelopes, 1 page, 2 signers (${DB_LABEL[kind]})`, { url: `${signet.origin}/v1/envelopes`, close: async () => {} }, {
          method: 'POST',
          body: upload.body,
          headers: { ...auth, 'content-type': upload.contentType },
        }),
      );
    } finally {
      await signet.close();
    }
  }

  if (only === 'mcp') {
    console.log('');
    printTable(rows, bare);
    console.log('\nMCP tools/call get_envelope_status against REST GET /v1/envelopes/{id}/status, same envelope, same run:');
    for (const line of ratios) console.log(line);
    if (rows.some((r) => r.failures > 0)) process.exitCode = 1;
    return;
  }

  const rss: string[] = [];
  for (const kind of kinds) {
    process.stderr.write(`  idle RSS: starting signet serve on ${DB_LABEL[kind]}\n`);
    const kb = await measureIdleRss(kind, databaseUrl, 2_000);
    rss.push(`  ${DB_LABEL[kind].padEnd(10)} ${kb === undefined ? 'n/a (no /proc)' : `${(kb / 1024).toFixed(1)} MiB`}`);
  }

  const uploads: string[] = [];
  const big = await bigPdf(25);
  for (const kind of kinds) {
    process.stderr.write(`  upload RSS: ${(big.length / 1e6).toFixed(1)} MB PDF to signet serve on ${DB_LABEL[kind]}\n`);
    const u = await measureUploadRss(kind, databaseUrl, big);
    const above = (u.peakKb - u.idleKb) * 1024;
    uploads.push(`  ${DB_LABEL[kind].padEnd(10)} idle ${(u.idleKb / 1024).toFixed(1)} MiB, peak ${(u.peakKb / 1024).toFixed(1)} MiB: ${(above / big.length).toFixed(2)}x the file above idle (${u.ms} ms)`);
  }

  process.stderr.write('  PDF pipeline: marker detection and sealing\n');
  const pdfRows = await benchPdf();
  let webhookRows: string | undefined;
  if (databaseUrl && kinds.includes('postgres')) {
    process.stderr.write('  webhooks: deliveries per second and commit-to-first-attempt lag (PostgreSQL)\n');
    webhookRows = formatWebhookRows(await benchWebhooks(databaseUrl));
  }

  console.log('');
  printTable(rows, bare);
  console.log('\nMCP tools/call get_envelope_status against REST GET /v1/envelopes/{id}/status, same envelope, same run:');
  for (const line of ratios) console.log(line);
  console.log('');
  console.log(`Idle RSS of a fresh server, 2 s after /health answered (${serveCommand().label}):`);
  for (const line of rss) console.log(line);
  console.log(`Server RSS during a create-and-send of a ${(big.length / 1e6).toFixed(1)} MB PDF:`);
  for (const line of uploads) console.log(line);
  console.log('');
  console.log(formatPdfRows(pdfRows));
  if (webhookRows) console.log(`\n${webhookRows}`);

  const failed = rows.filter((r) => r.failures > 0);
  if (failed.length) {
    console.error(`\nSome responses were not 2xx or failed: ${failed.map((r) => r.name).join(', ')}; the figures above are not comparable.`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
