/**
 * `npm run bench`: Signet's routes against a bare Fastify route and against a same-work floor, all
 * measured in one run on the same machine, each server in its own process, in two configurations (an
 * API node, worker off; `npm start`, worker in process: bench/configs.ts); then the verify route,
 * completion latency, seal latency per PAdES level, a bulk send, memory, the PDF pipeline and webhooks.
 * docs/benchmarks.md describes every row.
 *
 *   BENCH_DURATION            seconds per measured scenario (default 10)
 *   BENCH_WARMUP              seconds of unmeasured load before each scenario (default 2)
 *   BENCH_CONNECTIONS         concurrent connections for reads (default 20)
 *   BENCH_CREATE_CONNECTIONS  concurrent connections for creates (default 8)
 *   BENCH_DB                  pglite | postgres | both (default: postgres when DATABASE_URL is set, else pglite)
 *   DATABASE_URL              the PostgreSQL server; every server gets a fresh schema, dropped after
 *   BENCH_ONLY                read (or mcp) | create | links | verify | completion | seal | bulk: only those scenarios, no RSS, PDF or webhook runs
 *   BENCH_CONFIG              api | start | both (default both): the configurations of the read, create and link rows
 *   BENCH_BULK_ROWS           rows of the bulk-send scenario (default 1000)
 *   BENCH_SEALS               envelopes per PAdES level in the seal scenario (default 10, after 2 unmeasured)
 *   BENCH_PROFILE             1: Signet under node --cpu-prof; top functions by self time per scenario group, and each create row by component
 *   BENCH_PROFILE_KEEP        1: keep the .cpuprofile files and each row's measured windows (windows.json)
 *   BENCH_LOG_LEVEL           Signet's LOG_LEVEL for the measured servers (default info, Signet's default)
 *   BENCH_COMPLETIONS         envelopes in the completion scenario (default 20, after 2 unmeasured)
 *   BENCH_ROUNDS              turns of each Signet row with its floor (default 3; BENCH_DURATION is shared among them)
 *
 * Absolute figures depend on the machine; the ratios to the bare route and to the floors are what
 * to compare across runs.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { measureCompletion, type CompletionResult } from './completion.js';
import { measureBulkSend, type BulkResult } from './bulk-send.js';
import { placeLabel, signetConfigs } from './configs.js';
import { formatSealLevels, measureSealLevels, verifyRows, type SealLevelResult } from './evidence.js';
import { measureIdleRss } from './idle-rss.js';
import { measure, type Measured, type Row } from './load.js';
import { benchPdf, formatPdfRows } from './pdf.js';
import { QUOTED_PEER_LINES } from './peers.js';
import { configCostLines, floorRatio, printGoals } from './report.js';
import { createAndSendBody, expectStatus, multipart, textPdf } from './requests.js';
import { DB_LABEL, serveCommand, startBare, startFloor, type DbKind } from './servers.js';
import { signetRoutes, type BenchSettings, type Floor, type Floors } from './signet-rows.js';
import { bigPdf, measureUploadRss } from './upload-rss.js';
import { benchWebhooks, formatWebhookRows } from './webhooks.js';

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

const duration = positiveNumber('BENCH_DURATION', 10);
const warmup = positiveNumber('BENCH_WARMUP', 2);
const readConnections = Math.round(positiveNumber('BENCH_CONNECTIONS', 20));
const createConnections = Math.round(positiveNumber('BENCH_CREATE_CONNECTIONS', 8));
const completions = Math.round(positiveNumber('BENCH_COMPLETIONS', 20));
const logLevel = process.env.BENCH_LOG_LEVEL || 'info';
const profiling = process.env.BENCH_PROFILE === '1';
const databaseUrl = process.env.DATABASE_URL || undefined;
const kinds = dbKinds(databaseUrl);
const only = process.env.BENCH_ONLY || undefined;
const GROUPS = ['mcp', 'read', 'create', 'links', 'verify', 'completion', 'seal', 'bulk'];
if (only !== undefined && !GROUPS.includes(only)) throw new Error(`BENCH_ONLY must be one of ${GROUPS.join(', ')} or unset, got "${only}"`);
const configs = signetConfigs();
/** BENCH_ONLY=mcp is the read group (it holds the MCP scenario), as before the groups existed. */
const runs = (group: 'read' | 'create' | 'links' | 'verify' | 'completion' | 'seal' | 'bulk') => only === undefined || only === group || (only === 'mcp' && group === 'read');

const rounds = Math.round(positiveNumber('BENCH_ROUNDS', 3));
const reads = { connections: readConnections, warmup, duration };
const creates = { connections: createConnections, warmup, duration };

/** autocannon records whole milliseconds; 0 means under one. */
const ms = (v: number) => (v < 1 ? '<1' : v.toFixed(0));
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(3) : '');

function printTable(rows: Row[], bare: Row): void {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx', 'vs bare', 'vs floor', 'CPU ms/req: server', 'PostgreSQL'];
  const body = rows.map((r) => [
    r.name,
    r.rps.toFixed(0),
    ms(r.p50),
    ms(r.p99),
    String(r.requests),
    String(r.failures),
    ratio(r.rps, bare.rps),
    r.group.endsWith('floor') ? '1.000' : r.floor ? floorRatio(r).toFixed(3) : '',
    r.cpu ? r.cpu.serverMs.toFixed(2) : '',
    // PGlite runs inside the server: PostgreSQL's processes did none of its work.
    r.cpu && !r.name.includes(`(${DB_LABEL.pglite}`) && r.group !== 'bare' ? r.cpu.dbMs.toFixed(2) : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const b of body) console.log(line(b));
}

/** The floors of the read floor's process (bench/floors/read.ts): the read, link and verify floors. */
type ReadFloors = { read?: Floor; link?: Floor; verify?: Measured & { base: string }; stop(): Promise<void> };

/**
 * The read floor, probed first: the right token answers its row, a wrong one 401 (the SELECT ran); its
 * own row measured when the read group runs, the link floor's when the link group does. The verify
 * floor's row is measured with the verify row, once the sealed file is registered.
 */
async function readFloors(kind: DbKind): Promise<ReadFloors> {
  const token = `floor_${randomBytes(24).toString('base64url')}`;
  const floor = await startFloor('read', kind, databaseUrl, { FLOOR_TOKEN: token });
  const stop = () => floor.stop();
  try {
    const url = `${floor.base}/floor/read`;
    const bearer = { authorization: `Bearer ${token}` };
    const ok = await expectStatus<{ customerId?: string }>(await fetch(url, { headers: bearer }), 200, 'read floor');
    if (!ok.customerId) throw new Error('the read floor answered no row');
    const refused = await fetch(url, { headers: { authorization: 'Bearer wrong' } });
    await refused.arrayBuffer();
    if (refused.status !== 401) throw new Error(`the read floor answered ${refused.status} to a wrong token`);
    const out: ReadFloors = { stop };
    const floorOf = async (m: Measured, run: typeof reads): Promise<Floor> => ({ ...m, row: await measure(m.name, m.group, m.req, { ...run, pid: floor.pid }), stop });
    if (runs('read')) out.read = await floorOf({ name: `floor: sha256 + PK SELECT (${DB_LABEL[kind]})`, group: 'read floor', req: { url, headers: bearer }, pid: floor.pid }, reads);
    if (runs('links')) {
      await expectStatus(await fetch(`${floor.base}/floor/link`, { method: 'POST', headers: bearer }), 201, 'link floor');
      out.link = await floorOf({ name: `floor: sha256 + PK SELECT + 1-row INSERT tx (${DB_LABEL[kind]})`, group: 'link floor', req: { url: `${floor.base}/floor/link`, method: 'POST', headers: bearer }, pid: floor.pid }, creates);
    }
    if (runs('verify')) {
      const req = { url: `${floor.base}/floor/verify`, method: 'POST' as const, headers: { 'content-type': 'application/pdf' } };
      out.verify = { name: `floor: 2 SHA-256 of the file + RSA verify + SELECT (${DB_LABEL[kind]})`, group: 'verify floor', req, pid: floor.pid, base: floor.base };
    }
    return out;
  } catch (err) {
    await floor.stop();
    throw err;
  }
}

/** The create floor, probed first (a non-PDF is refused: the parse ran); at its stop, every 2xx left a row and a file. */
async function createFloor(kind: DbKind, upload: { body: Buffer; contentType: string }): Promise<Floor> {
  const floor = await startFloor('create', kind, databaseUrl);
  try {
    const url = `${floor.base}/floor/create`;
    const notPdf = await multipart({ pdf: { bytes: new TextEncoder().encode('This is not a PDF.\n'), filename: 'x.pdf', type: 'application/pdf' }, payload: '{}' });
    const bad = await fetch(url, { method: 'POST', headers: { 'content-type': notPdf.contentType }, body: new Uint8Array(notPdf.body) });
    await bad.arrayBuffer();
    if (bad.status !== 400) throw new Error(`the create floor answered ${bad.status} to a file that is not a PDF`);
    const measured: Measured = { name: `floor: multipart + PDF parse + fsync'd file + 1-row tx (${DB_LABEL[kind]})`, group: 'create floor', req: { url, method: 'POST', body: upload.body, headers: { 'content-type': upload.contentType } }, pid: floor.pid };
    const row = await measure(measured.name, measured.group, measured.req, { ...creates, pid: floor.pid });
    const stop = async () => {
      try {
        // Requests still in flight when the load stopped may have written their file and not their row yet.
        let count = { rows: 0, files: -1 };
        for (let tries = 0; tries < 50 && count.rows !== count.files; tries++) {
          if (tries) await sleep(100);
          count = await expectStatus<{ rows: number; files: number }>(await fetch(`${floor.base}/floor/count`), 200, 'create floor count');
        }
        if (count.rows !== count.files || count.rows < row.requests - row.failures) throw new Error(`the create floor kept ${count.rows} rows and ${count.files} files for ${row.requests} requests`);
      } finally {
        await floor.stop();
      }
    };
    return { ...measured, row, stop };
  } catch (err) {
    await floor.stop();
    throw err;
  }
}

async function main(): Promise<void> {
  console.log(`Signet bench: Node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'CPU'}, ${duration} s per scenario after ${warmup} s warm-up`);
  console.log(`Connections: ${readConnections} for reads, ${createConnections} for creates. Signet: ${serveCommand().label}, LOG_LEVEL=${logLevel} (stdout to a file), rate limit out of reach${profiling ? ', under --cpu-prof (figures lower than without)' : ''}`);
  // Other work on the machine skews every figure; the load average makes that visible in the output.
  console.log(`Load average before the run: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);

  const rows: Row[] = [];
  const mcpLines: string[] = [];
  const profiles: string[] = [];
  const completion = new Map<DbKind, CompletionResult>();
  const requestGroups = runs('read') || runs('create') || runs('links') || runs('verify');
  const settings: BenchSettings = { databaseUrl, logLevel, profiling, rounds, warmup, duration, readConnections, createConnections, runs };

  let bare: Row | undefined;
  if (requestGroups) {
    const server = await startBare();
    try {
      bare = await measure('bare Fastify GET /bare', 'bare', { url: `${server.base}/bare` }, { ...reads, pid: server.pid });
      rows.push(bare);
    } finally {
      await server.stop();
    }
  }

  const onePage = await textPdf(1);
  for (const kind of kinds) {
    if (!requestGroups) break;
    const floors: Floors = {};
    let shared: Awaited<ReturnType<typeof readFloors>> | undefined;
    try {
      if (runs('read') || runs('links') || runs('verify')) {
        shared = await readFloors(kind);
        floors.read = shared.read;
        floors.link = shared.link;
        for (const f of [floors.read, floors.link]) if (f) rows.push(f.row);
      }
      if (runs('create')) rows.push((floors.create = await createFloor(kind, await createAndSendBody(onePage))).row);
      // Both configurations against the same floors, one after the other.
      for (const config of runs('read') || runs('create') || runs('links') ? configs : []) {
        const signet = await signetRoutes(kind, config, floors, onePage, settings);
        rows.push(...signet.rows);
        if (signet.mcpLine) mcpLines.push(signet.mcpLine);
        profiles.push(...signet.profile);
      }
      if (shared?.verify) rows.push(...(await verifyRows(kind, databaseUrl, shared.verify, { ...creates, rounds, logLevel })));
    } finally {
      await shared?.stop();
      await floors.create?.stop();
    }
  }

  if (runs('completion')) {
    for (const kind of kinds) {
      process.stderr.write(`  completion: ${completions} envelopes of 10 pages, 2 signers, signet serve with its worker on ${DB_LABEL[kind]}\n`);
      completion.set(kind, await measureCompletion(kind, databaseUrl, { runs: completions, warmup: 2, logLevel }));
    }
  }
  const seals = new Map<DbKind, SealLevelResult[]>();
  if (runs('seal')) {
    for (const kind of kinds) seals.set(kind, await measureSealLevels(kind, databaseUrl, { runs: Math.round(positiveNumber('BENCH_SEALS', 10)), logLevel }));
  }

  const bulk = new Map<DbKind, BulkResult>();
  if (runs('bulk')) {
    const bulkRows = Math.round(positiveNumber('BENCH_BULK_ROWS', 1000));
    for (const kind of kinds) {
      process.stderr.write(`  bulk send: ${bulkRows} rows of 2 slots, signet serve with its worker on ${DB_LABEL[kind]}\n`);
      bulk.set(kind, await measureBulkSend(kind, databaseUrl, { rows: bulkRows, logLevel }));
    }
  }

  const rss: string[] = [];
  const uploads = new Map<DbKind, { line: string; ratio: number }>();
  let big: Uint8Array | undefined;
  let pdfRows: string | undefined;
  let webhookRows: string | undefined;
  const idleRss = new Map<DbKind, number | undefined>();
  if (only === undefined) {
    // Both stores whatever BENCH_DB says (the goal names both), PostgreSQL when DATABASE_URL is set.
    for (const kind of (databaseUrl ? ['pglite', 'postgres'] : ['pglite']) as DbKind[]) {
      process.stderr.write(`  idle RSS: starting signet serve (worker in process, as npm start) on ${DB_LABEL[kind]}\n`);
      const kb = await measureIdleRss(kind, databaseUrl, 2_000);
      idleRss.set(kind, kb);
      rss.push(`  ${DB_LABEL[kind].padEnd(10)} ${kb === undefined ? 'n/a (no /proc)' : `${(kb / 1024).toFixed(1)} MiB`}`);
    }
    big = await bigPdf(25);
    for (const kind of kinds) {
      process.stderr.write(`  upload RSS: ${(big.length / 1e6).toFixed(1)} MB PDF to signet serve on ${DB_LABEL[kind]}\n`);
      const u = await measureUploadRss(kind, databaseUrl, big);
      const above = ((u.peakKb - u.idleKb) * 1024) / big.length;
      uploads.set(kind, { ratio: above, line: `  ${DB_LABEL[kind].padEnd(10)} idle ${(u.idleKb / 1024).toFixed(1)} MiB, peak ${(u.peakKb / 1024).toFixed(1)} MiB: ${above.toFixed(2)}x the file above idle (${u.ms} ms); the first upload of a quiet spell started the parsing worker: +${(u.workerKb / 1024).toFixed(1)} MiB` });
    }
    process.stderr.write('  PDF pipeline: marker detection and sealing\n');
    pdfRows = formatPdfRows(await benchPdf());
    if (databaseUrl && kinds.includes('postgres')) {
      process.stderr.write('  webhooks: deliveries per second and commit-to-first-attempt lag (PostgreSQL)\n');
      webhookRows = formatWebhookRows(await benchWebhooks(databaseUrl));
    }
  }

  console.log('');
  if (bare) {
    printTable(rows, bare);
    for (const r of rows.filter((r) => r.seconds !== undefined)) console.log(`  (${r.name}: ${r.requests} requests in ${r.seconds!.toFixed(1)} s, one draft each)`);
    const cost = configCostLines(rows, kinds);
    if (cost.length) {
      console.log('\nWhat the floors do not do: no job, no email. An API node leaves each envelope\'s distribution job and two invitation');
      console.log('emails to a worker process; npm start does them itself (its create rows run until the queue drained). Server CPU per request:');
      for (const line of cost) console.log(line);
    }
  }
  if (mcpLines.length) {
    console.log('\nMCP tools/call get_envelope_status against REST GET /v1/envelopes/{id}/status, same envelope, same run:');
    for (const line of mcpLines) console.log(line);
  }
  if (completion.size) {
    console.log(`\nCompletion: last signature sent → GET /v1/envelopes/{id}/status says COMPLETED (10-page PDF, 2 signers, polled every 5 ms, worker on):`);
    for (const [kind, c] of completion) console.log(`  ${DB_LABEL[kind].padEnd(10)} ${c.runs} envelopes: p50 ${c.p50.toFixed(0)} ms, p90 ${c.p90.toFixed(0)} ms, max ${c.max.toFixed(0)} ms`);
  }
  for (const [kind, results] of seals) {
    console.log(`\nSeal latency by PAdES level: last signature sent → COMPLETED (10-page PDF, 2 signers, worker on), sealed with a test CA's leaf, the local OpenSSL TSA and OCSP responder (test/fixtures/pki.ts):`);
    for (const line of formatSealLevels(kind, results)) console.log(line);
  }
  if (bulk.size) {
    console.log('\nBulk send: POST /v1/templates/{id}/bulk-sends → GET /v1/bulk-sends/{id} says COMPLETED (1-page PDF, 2 slots a row, invitations distributed meanwhile):');
    for (const [kind, b] of bulk) {
      // Its baseline: one create-and-send at a time as npm start runs it (same store, same run), jobs drained.
      const single = rows.find((r) => r.name.startsWith('Signet POST /v1/envelopes create-and-send') && r.name.endsWith(`(${placeLabel(kind, 'start')})`));
      const perSecond = (b.rows * 1000) / b.ms;
      const vs = single ? `; ${(perSecond / single.rps).toFixed(2)}x npm start's create-and-send rate, ${single.rps.toFixed(0)}/s` : '';
      console.log(`  ${DB_LABEL[kind].padEnd(10)} ${b.rows} rows in ${(b.ms / 1000).toFixed(1)} s (${perSecond.toFixed(0)} rows/s${vs}; ${b.created} created, ${b.failed} failed)`);
    }
  }
  if (only === undefined) {
    console.log(`\nIdle RSS of a fresh server, 2 s after /health answered (${serveCommand().label}):`);
    for (const line of rss) console.log(line);
    console.log(`Server RSS during a create-and-send of a ${(big!.length / 1e6).toFixed(1)} MB PDF:`);
    for (const u of uploads.values()) console.log(u.line);
    console.log(`\n${pdfRows}`);
    if (webhookRows) console.log(`\n${webhookRows}`);
  }
  for (const p of profiles) console.log(`\n${p}`);

  printGoals({ rows, kinds, configs, completion, uploads, idleRss });
  console.log(`\n${QUOTED_PEER_LINES.join('\n')}`);

  const failed = rows.filter((r) => r.failures > 0);
  if (failed.length) {
    console.error(`\nSome responses were not 2xx or failed: ${failed.map((r) => r.name).join(', ')}; the figures above are not comparable.`);
    process.exitCode = 1;
  }
  const silent = rows.filter((r) => r.requests === 0);
  if (silent.length) {
    console.error(`\nNo response at all in the measured time: ${silent.map((r) => r.name).join(', ')}; try a longer BENCH_DURATION.`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
