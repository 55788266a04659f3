/**
 * `npm run bench`: Signet's routes against a bare Fastify route and against a same-work floor, all
 * measured in one run on the same machine, each server in its own process; then completion latency,
 * memory, the PDF pipeline and webhooks. README.md ("Benchmarks") describes every row.
 *
 *   BENCH_DURATION            seconds per measured scenario (default 10)
 *   BENCH_WARMUP              seconds of unmeasured load before each scenario (default 2)
 *   BENCH_CONNECTIONS         concurrent connections for reads (default 20)
 *   BENCH_CREATE_CONNECTIONS  concurrent connections for creates (default 8)
 *   BENCH_DB                  pglite | postgres | both (default: postgres when DATABASE_URL is set, else pglite)
 *   DATABASE_URL              the PostgreSQL server; every server gets a fresh schema, dropped after
 *   BENCH_ONLY                read (or mcp) | create | completion | bulk: only those scenarios, no RSS, PDF or webhook runs
 *   BENCH_BULK_ROWS           rows of the bulk-send scenario (default 1000)
 *   BENCH_PROFILE             1: Signet under node --cpu-prof; top functions by self time per scenario group
 *   BENCH_LOG_LEVEL           Signet's LOG_LEVEL for the measured servers (default info, Signet's default)
 *   BENCH_COMPLETIONS         envelopes in the completion scenario (default 20, after 2 unmeasured)
 *   BENCH_ROUNDS              turns of each Signet row with its floor (default 3; BENCH_DURATION is shared among them)
 *
 * Absolute figures depend on the machine; the ratios to the bare route and to the floors are what
 * to compare across runs.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { measureCompletion, type CompletionResult } from './completion.js';
import { measureBulkSend, type BulkResult } from './bulk-send.js';
import { measureIdleRss } from './idle-rss.js';
import { measure, measureAmount, measurePaired, type LoadRequest, type Measured, type Row } from './load.js';
import { mcpServed, statusRequests } from './mcp.js';
import { benchPdf, formatPdfRows } from './pdf.js';
import { formatSummary, readProfiles, summarize } from './profile.js';
import { authed, createAndSendBody, createTemplate, expectStatus, fromTemplateBody, makeDrafts, multipart, textPdf, type Client } from './requests.js';
import { DB_LABEL, createCustomer, serveCommand, startBare, startFloor, startSignet, type DbKind } from './servers.js';
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
if (only !== undefined && !['mcp', 'read', 'create', 'completion', 'bulk'].includes(only)) throw new Error(`BENCH_ONLY must be read, mcp, create, completion, bulk or unset, got "${only}"`);
/** BENCH_ONLY=mcp is the read group (it holds the MCP scenario), as before the groups existed. */
const runs = (group: 'read' | 'create' | 'completion' | 'bulk') => only === undefined || only === group || (only === 'mcp' && group === 'read');

const rounds = Math.round(positiveNumber('BENCH_ROUNDS', 3));
const reads = { connections: readConnections, warmup, duration };
const creates = { connections: createConnections, warmup, duration };

/** autocannon records whole milliseconds; 0 means under one. */
const ms = (v: number) => (v < 1 ? '<1' : v.toFixed(0));
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(3) : '');
/** A row against its floor: measured in turns with it (the rounds' median), else against the floor's own row. */
const floorRatio = (r: Row) => r.paired?.ratio ?? r.rps / r.floor!.rps;

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
    r.cpu && !r.name.includes(`(${DB_LABEL.pglite})`) && r.group !== 'bare' ? r.cpu.dbMs.toFixed(2) : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const b of body) console.log(line(b));
}

/** A floor kept running after its own row, for the Signet rows measured in turns with it. */
type Floor = Measured & { row: Row; stop(): Promise<void> };

/** The read floor, probed first: the right token answers its row, a wrong one 401 (the SELECT ran). */
async function readFloor(kind: DbKind): Promise<Floor> {
  const token = `floor_${randomBytes(24).toString('base64url')}`;
  const floor = await startFloor('read', kind, databaseUrl, { FLOOR_TOKEN: token });
  try {
    const url = `${floor.base}/floor/read`;
    const ok = await expectStatus<{ customerId?: string }>(await fetch(url, { headers: { authorization: `Bearer ${token}` } }), 200, 'read floor');
    if (!ok.customerId) throw new Error('the read floor answered no row');
    const refused = await fetch(url, { headers: { authorization: 'Bearer wrong' } });
    await refused.arrayBuffer();
    if (refused.status !== 401) throw new Error(`the read floor answered ${refused.status} to a wrong token`);
    const measured: Measured = { name: `floor: sha256 + PK SELECT (${DB_LABEL[kind]})`, group: 'read floor', req: { url, headers: { authorization: `Bearer ${token}` } }, pid: floor.pid };
    const row = await measure(measured.name, measured.group, measured.req, { ...reads, pid: floor.pid });
    return { ...measured, row, stop: () => floor.stop() };
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

type SignetRun = { rows: Row[]; mcpLine: string; profile: string[] };

/** One `signet serve` (worker off) for the read and create groups; optionally profiled. */
async function signetRoutes(kind: DbKind, floors: { read?: Floor; create?: Floor }, onePage: Uint8Array): Promise<SignetRun> {
  const label = DB_LABEL[kind];
  const profDir = profiling ? mkdtempSync(path.join(tmpdir(), 'signet-bench-prof-')) : undefined;
  const server = await startSignet(kind, databaseUrl, {
    env: { LOG_LEVEL: logLevel, WORKER_ENABLED: 'false' },
    nodeArgs: profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
  });
  const rows: Row[] = [];
  const windows = { read: [] as [number, number][], create: [] as [number, number][] };
  const readRun = { ...reads, pid: server.pid };
  const createRun = { ...creates, pid: server.pid };
  const add = (row: Row) => {
    rows.push(row);
    for (const r of row.paired?.rounds ?? [row]) windows[row.group as 'read' | 'create'].push(r.window);
  };
  /** In turns with its floor when there is one (measurePaired), else on its own. */
  const measureRow = (name: string, group: 'read' | 'create', req: LoadRequest, floor: Floor | undefined): Promise<Row> => {
    const run = group === 'read' ? readRun : createRun;
    return floor ? measurePaired({ name, group, req, pid: server.pid }, floor, { ...run, rounds }) : measure(name, group, req, run);
  };
  let mcpLine = '';
  try {
    const c: Client = { base: server.base, ...(await createCustomer(server.base)) };
    if (runs('read')) {
      add(await measureRow(`Signet GET /v1/account (${label})`, 'read', { url: `${c.base}/v1/account`, headers: authed(c) }, floors.read));
      if (await mcpServed(c.base)) {
        const { rest, mcp } = await statusRequests(c);
        const restRow = await measureRow(`Signet GET /v1/envelopes/{id}/status (${label})`, 'read', rest, floors.read);
        const mcpRow = await measureRow(`Signet MCP tools/call get_envelope_status (${label})`, 'read', mcp, floors.read);
        add(restRow);
        add(mcpRow);
        const r = mcpRow.rps / restRow.rps;
        mcpLine = `  ${label.padEnd(10)} MCP ${mcpRow.rps.toFixed(0)} req/s vs REST ${restRow.rps.toFixed(0)} req/s: ${r.toFixed(3)} (goal >= 0.5: ${r >= 0.5 ? 'met' : 'NOT met'})`;
      } else {
        mcpLine = `  ${label.padEnd(10)} POST /mcp is not served (404): no MCP figures`;
      }
    }
    if (runs('create')) {
      const upload = await createAndSendBody(onePage);
      add(await measureRow(`Signet POST /v1/envelopes create-and-send, 1 page, 2 signers (${label})`, 'create', { url: `${c.base}/v1/envelopes`, method: 'POST', body: upload.body, headers: authed(c, { 'content-type': upload.contentType }), idempotencyKey: true }, floors.create));

      const templateId = await createTemplate(c, onePage);
      const fromTemplate: LoadRequest = { url: `${c.base}/v1/templates/${templateId}/from-template`, method: 'POST', body: fromTemplateBody(true), headers: authed(c, { 'content-type': 'application/json' }), idempotencyKey: true };
      const fromRow = await measureRow(`Signet POST /v1/templates/{id}/from-template, sent (${label})`, 'create', fromTemplate, floors.create);
      add(fromRow);

      // Each send uses up a draft: make 1.5 times as many as from-template (the nearest shape) did in
      // the same time, then send a fixed number of them (its rate: that number over the time it took).
      const estimate = Math.max(fromRow.rps, 1);
      const warmupSends = Math.max(createConnections, Math.ceil(estimate * warmup));
      const measuredSends = Math.min(30_000, Math.max(createConnections * 4, Math.ceil(estimate * duration * 1.5)));
      process.stderr.write(`  making ${warmupSends + measuredSends} drafts from the template\n`);
      const drafts = await makeDrafts(c, templateId, warmupSends + measuredSends, createConnections);
      let next = 0;
      const send: LoadRequest = { url: `${c.base}/v1/envelopes/${drafts[0]}/send`, method: 'POST', headers: authed(c), idempotencyKey: true, nextPath: () => `/v1/envelopes/${drafts[next++]}/send` };
      // The drafts are used up once, so no rounds: the floor runs once, just before.
      const floorNow = floors.create && (await measure(`${floors.create.name}, before the sends`, floors.create.group, floors.create.req, { ...createRun, pid: floors.create.pid }));
      const sendRow = await measureAmount(`Signet POST /v1/envelopes/{id}/send of a draft (${label})`, 'create', send, warmupSends, measuredSends, createConnections, server.pid);
      add(floorNow ? { ...sendRow, floor: floors.create!.row, paired: { ratio: sendRow.rps / floorNow.rps, ratios: [sendRow.rps / floorNow.rps], rounds: [sendRow] } } : sendRow);
      if (next > drafts.length) throw new Error(`sent ${next} requests for ${drafts.length} drafts`);
    }
    // The profile is written as the server exits.
    await server.stop();
    const profile: string[] = [];
    if (profDir) {
      const profiles = readProfiles(profDir);
      for (const group of ['read', 'create'] as const) {
        if (windows[group].length) profile.push(formatSummary(`Signet on ${label}, ${group} scenarios (measured seconds only), top 15 by self time`, summarize(profiles, windows[group])));
      }
    }
    return { rows, mcpLine, profile };
  } finally {
    await server.stop();
    if (profDir) rmSync(profDir, { recursive: true, force: true });
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
  const requestGroups = runs('read') || runs('create');

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
    const floors: { read?: Floor; create?: Floor } = {};
    let signet: SignetRun;
    try {
      if (runs('read')) rows.push((floors.read = await readFloor(kind)).row);
      if (runs('create')) rows.push((floors.create = await createFloor(kind, await createAndSendBody(onePage))).row);
      signet = await signetRoutes(kind, floors, onePage);
    } finally {
      await floors.read?.stop();
      await floors.create?.stop();
    }
    rows.push(...signet.rows);
    if (signet.mcpLine) mcpLines.push(signet.mcpLine);
    profiles.push(...signet.profile);
  }

  if (runs('completion')) {
    for (const kind of kinds) {
      process.stderr.write(`  completion: ${completions} envelopes of 10 pages, 2 signers, signet serve with its worker on ${DB_LABEL[kind]}\n`);
      completion.set(kind, await measureCompletion(kind, databaseUrl, { runs: completions, warmup: 2, logLevel }));
    }
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
  if (only === undefined) {
    for (const kind of kinds) {
      process.stderr.write(`  idle RSS: starting signet serve on ${DB_LABEL[kind]}\n`);
      const kb = await measureIdleRss(kind, databaseUrl, 2_000);
      rss.push(`  ${DB_LABEL[kind].padEnd(10)} ${kb === undefined ? 'n/a (no /proc)' : `${(kb / 1024).toFixed(1)} MiB`}`);
    }
    big = await bigPdf(25);
    for (const kind of kinds) {
      process.stderr.write(`  upload RSS: ${(big.length / 1e6).toFixed(1)} MB PDF to signet serve on ${DB_LABEL[kind]}\n`);
      const u = await measureUploadRss(kind, databaseUrl, big);
      const above = ((u.peakKb - u.idleKb) * 1024) / big.length;
      uploads.set(kind, { ratio: above, line: `  ${DB_LABEL[kind].padEnd(10)} idle ${(u.idleKb / 1024).toFixed(1)} MiB, peak ${(u.peakKb / 1024).toFixed(1)} MiB: ${above.toFixed(2)}x the file above idle (${u.ms} ms)` });
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
  }
  if (mcpLines.length) {
    console.log('\nMCP tools/call get_envelope_status against REST GET /v1/envelopes/{id}/status, same envelope, same run:');
    for (const line of mcpLines) console.log(line);
  }
  if (completion.size) {
    console.log(`\nCompletion: last signature sent → GET /v1/envelopes/{id}/status says COMPLETED (10-page PDF, 2 signers, polled every 5 ms, worker on):`);
    for (const [kind, c] of completion) console.log(`  ${DB_LABEL[kind].padEnd(10)} ${c.runs} envelopes: p50 ${c.p50.toFixed(0)} ms, p90 ${c.p90.toFixed(0)} ms, max ${c.max.toFixed(0)} ms`);
  }
  if (bulk.size) {
    console.log('\nBulk send: POST /v1/templates/{id}/bulk-sends → GET /v1/bulk-sends/{id} says COMPLETED (1-page PDF, 2 slots a row, invitations distributed meanwhile):');
    for (const [kind, b] of bulk) console.log(`  ${DB_LABEL[kind].padEnd(10)} ${b.rows} rows in ${(b.ms / 1000).toFixed(1)} s (${((b.rows * 1000) / b.ms).toFixed(0)} rows/s; ${b.created} created, ${b.failed} failed)`);
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

  console.log('\nGoals (issue 14):');
  const goal = (kind: DbKind, text: string, met: boolean) => console.log(`  ${DB_LABEL[kind].padEnd(10)} ${text}: ${met ? 'met' : 'NOT met'}`);
  for (const kind of kinds) {
    for (const r of rows.filter((r) => r.floor && r.name.endsWith(`(${DB_LABEL[kind]})`) && !r.name.includes(' MCP '))) {
      const name = r.name.replace(/^Signet /, '').replace(/ \([^)]*\)$/, '');
      const [min, what] = r.group === 'read' ? [0.8, 'read'] : [0.33, 'create'];
      const each = (r.paired?.ratios.length ?? 0) > 1 ? `, median of ${r.paired!.ratios.map((x) => x.toFixed(2)).join(' ')}` : '';
      goal(kind, `${what} ${name}: ${floorRatio(r).toFixed(3)} of its floor (>= ${min}${each})`, floorRatio(r) >= min);
    }
    const c = completion.get(kind);
    if (c) goal(kind, `completion p50 ${c.p50.toFixed(0)} ms (<= 100 ms)`, c.p50 <= 100);
    const u = uploads.get(kind);
    if (u) goal(kind, `upload RSS ${u.ratio.toFixed(2)}x the file above idle (< 2x)`, u.ratio < 2);
  }

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
