/**
 * `npx tsx bench/embedded-db.ts`: the two embedded stores side by side, PGlite (EMBEDDED_DB=pglite) and
 * embedded PostgreSQL (EMBEDDED_DB=postgres), each as `node dist/cli.js serve` in its own process with a
 * fresh DATA_DIR and no DATABASE_URL, the load coming from this process.
 *
 *   BENCH_DURATION  seconds of each load (default 5); reads with 20 connections, creates with 8
 *   BENCH_AS_USER   run the servers as this existing user (DATA_DIR is given to it); default: as we are
 *   BENCH_STORES    `pglite,postgres` (default), in the order given
 *
 * Memory counts every process of the store: Signet and its children, the postmaster and its backends
 * (joined through postmaster.pid, as they are not always our children), read from /proc. RSS sums
 * count shared pages once per process; PSS splits them, so its sum is what the set really holds.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { PDF } from '@libpdf/core';

type Store = 'pglite' | 'postgres';
/** Which stores, in which order (the machine's load drifts: swap the order between runs to see it). */
const STORES = (process.env.BENCH_STORES || 'pglite,postgres').split(',').map((s) => {
  if (s !== 'pglite' && s !== 'postgres') throw new Error(`BENCH_STORES lists pglite and/or postgres, got "${s}"`);
  return s as Store;
});
const LABEL: Record<Store, string> = { pglite: 'PGlite', postgres: 'embedded PostgreSQL' };
const ROOT = path.resolve(import.meta.dirname, '..');
const OPS_TOKEN = 'bench-ops-token-0123456789abcdef';
const duration = Number(process.env.BENCH_DURATION || 5);
const asUser = process.env.BENCH_AS_USER || undefined;

function userIds(name: string): { uid: number; gid: number; home: string } {
  const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
  const home = execFileSync('getent', ['passwd', name], { encoding: 'utf8' }).split(':')[5] || '/';
  return { uid: id('-u'), gid: id('-g'), home };
}
const runAs = asUser ? userIds(asUser) : undefined;

/** `npm run build` into a private directory, so the figures are those of `npm start`, not of tsx. */
function build(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'signet-embedded-bench-'));
  chmodSync(dir, 0o755);
  try {
    execFileSync(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', path.join(ROOT, 'tsconfig.json'), '--outDir', path.join(dir, 'dist'), '--tsBuildInfoFile', path.join(dir, 'tsbuildinfo')], { stdio: 'pipe' });
  } catch (err) {
    // Type errors still emit JavaScript; a build that emitted nothing is the failure.
    if (!existsSync(path.join(dir, 'dist', 'cli.js'))) throw err;
  }
  for (const assets of ['db/migrations', 'web/assets', 'web/signing/assets', 'web/verify/assets', 'web/verify-document/assets', 'web/dashboard/assets']) {
    if (existsSync(path.join(ROOT, 'src', assets))) cpSync(path.join(ROOT, 'src', assets), path.join(dir, 'dist', assets), { recursive: true });
  }
  cpSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

type Server = { child: ChildProcess; pid: number; base: () => string; output: () => string; exited: Promise<void> };

function startServer(app: string, dataDir: string, store: Store, command: 'serve' | 'worker'): Server {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: runAs?.home ?? process.env.HOME,
    DATA_DIR: dataDir,
    EMBEDDED_DB: store,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    OPS_TOKEN,
    RATE_LIMIT_MAX: '1000000000',
  };
  const child = spawn(process.execPath, [path.join(app, 'dist', 'cli.js'), command], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'], ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // PORT=0: the system picks a free port, which the start-up line names.
  const base = () => /listening on (http:\/\/\S+)/.exec(out)?.[1] ?? '';
  return { child, pid: child.pid!, base, output: () => out, exited };
}

/** Milliseconds from spawn to the first /health 200. */
async function untilHealthy(server: Server, startedAt: number): Promise<number> {
  for (;;) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) throw new Error(`server exited:\n${server.output()}`);
    if (server.base()) {
      const res = await fetch(`${server.base()}/health`).catch(() => undefined);
      if (res?.status === 200) return Date.now() - startedAt;
    }
    if (Date.now() - startedAt > 120_000) throw new Error(`no /health 200 in 120 s:\n${server.output()}`);
    await sleep(20);
  }
}

async function stop(server: Server, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill(signal);
  await server.exited;
}

// --- processes and memory, from /proc

function processTable(): Map<number, { ppid: number; cmd: string }> {
  const table = new Map<number, { ppid: number; cmd: string }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      table.set(Number(name), { ppid, cmd: readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ') });
    } catch {
      // Gone meanwhile.
    }
  }
  return table;
}

/** The processes of this DATA_DIR's server: postmaster, its children, and any postgres naming the directory. */
function postgresPids(dataDir: string): number[] {
  const table = processTable();
  const roots = [...table].filter(([, p]) => p.cmd.includes(`-D ${path.join(dataDir, 'pg', 'data')}`)).map(([pid]) => pid);
  return descendants(roots, table);
}

function descendants(roots: number[], table = processTable()): number[] {
  const out = new Set(roots.filter((pid) => table.has(pid)));
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, p] of table) if (!out.has(pid) && out.has(p.ppid)) (out.add(pid), (grew = true));
  }
  return [...out];
}

function memoryKb(pids: number[]): { rss: number; pss: number; count: number } {
  let rss = 0;
  let pss = 0;
  let count = 0;
  for (const pid of pids) {
    try {
      rss += Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      pss += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
      count++;
    } catch {
      // Exited meanwhile.
    }
  }
  return { rss, pss, count };
}

const storePids = (server: Server, dataDir: string) => [...new Set([...descendants([server.pid]), ...postgresPids(dataDir)])];

/** Peak memory of the store's processes while `work` runs, sampled every 100 ms. */
async function peakDuring<T>(server: Server, dataDir: string, work: Promise<T>): Promise<{ result: T; rss: number; pss: number }> {
  let rss = 0;
  let pss = 0;
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const m = memoryKb(storePids(server, dataDir));
      rss = Math.max(rss, m.rss);
      pss = Math.max(pss, m.pss);
      await sleep(100);
    }
  })();
  const result = await work.finally(() => (done = true));
  await sampler;
  return { result, rss, pss };
}

// --- load

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

async function seedCustomer(base: string): Promise<string> {
  const res = await fetch(`${base}/ops/customers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'bench@example.com', name: 'Bench', creditCents: 100_000_000 }),
  });
  if (res.status !== 201) throw new Error(`POST /ops/customers answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { apiKey: string }).apiKey;
}

type Load = { rps: number; p50: number; p99: number; failures: number };

async function reads(base: string, apiKey: string, seconds: number): Promise<Load> {
  const r = await autocannon({ url: `${base}/v1/account`, headers: { authorization: `Bearer ${apiKey}` }, connections: 20, duration: seconds });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, failures: r.non2xx + r.errors + r.timeouts };
}

async function creates(base: string, apiKey: string, seconds: number, upload: { body: Buffer; contentType: string }): Promise<Load> {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': upload.contentType };
  const r = await autocannon({
    url: `${base}/v1/envelopes`,
    connections: 8,
    duration: seconds,
    // Each create needs its own Idempotency-Key.
    requests: [{ method: 'POST', body: upload.body, setupRequest: (req) => ({ ...req, headers: { ...headers, 'idempotency-key': randomUUID() } }) }],
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, failures: r.non2xx + r.errors + r.timeouts };
}

// --- the stores

type Figures = Record<string, string>;
type Run = { store: Store; dataDir: string; serve: Server; apiKey: string; f: Figures };
const mib = (kb: number) => `${(kb / 1024).toFixed(0)}`;

/** First start on a fresh DATA_DIR (initdb), a customer, then the idle memory. */
async function setUp(app: string, store: Store): Promise<Run> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `signet-${store}-`));
  if (runAs) chownSync(dataDir, runAs.uid, runAs.gid);
  process.stderr.write(`${LABEL[store]}: first start\n`);
  const t = Date.now();
  const run: Run = { store, dataDir, serve: startServer(app, dataDir, store, 'serve'), apiKey: '', f: {} };
  run.f['start, first (initdb), ms'] = String(await untilHealthy(run.serve, t));
  run.apiKey = await seedCustomer(run.serve.base());
  await sleep(3_000);
  const idle = memoryKb(storePids(run.serve, run.dataDir));
  run.f['processes'] = String(idle.count);
  run.f['idle RSS sum, MiB'] = mib(idle.rss);
  run.f['idle PSS sum, MiB'] = mib(idle.pss);
  return run;
}

/**
 * Reads, then creates, in the order A B B A with both servers up (the idle one costs next to nothing),
 * so a load that drifts during the run weighs on both stores alike; each figure is the mean of two.
 */
async function loads(runs: Run[], upload: { body: Buffer; contentType: string }): Promise<void> {
  const order = [...runs, ...[...runs].reverse()];
  const peak = new Map<Run, { rss: number; pss: number }>(runs.map((r) => [r, { rss: 0, pss: 0 }]));
  for (const kind of ['reads', 'creates'] as const) {
    const got = new Map<Run, Load[]>(runs.map((r) => [r, []]));
    for (const run of order) {
      process.stderr.write(`${LABEL[run.store]}: ${kind}\n`);
      const go = (seconds: number) => (kind === 'reads' ? reads(run.serve.base(), run.apiKey, seconds) : creates(run.serve.base(), run.apiKey, seconds, upload));
      await go(1); // warm-up
      const m = await peakDuring(run.serve, run.dataDir, go(duration));
      got.get(run)!.push(m.result);
      const p = peak.get(run)!;
      (p.rss = Math.max(p.rss, m.rss)), (p.pss = Math.max(p.pss, m.pss));
      await sleep(2_000); // jobs the creates queued
    }
    for (const run of runs) {
      const l = got.get(run)!;
      const mean = l.reduce((a, x) => a + x.rps, 0) / l.length;
      const each = l.map((x) => x.rps.toFixed(kind === 'reads' ? 0 : 1)).join(', ');
      const failed = l.reduce((a, x) => a + x.failures, 0);
      const p99 = Math.max(...l.map((x) => x.p99));
      run.f[kind === 'reads' ? 'GET /v1/account req/s (-c 20)' : 'POST /v1/envelopes creates/s (-c 8)'] = `${mean.toFixed(kind === 'reads' ? 0 : 1)} (runs ${each}; p99 ${p99} ms; ${failed} failed)`;
    }
  }
  for (const run of runs) {
    run.f['loaded RSS sum (peak), MiB'] = mib(peak.get(run)!.rss);
    run.f['loaded PSS sum (peak), MiB'] = mib(peak.get(run)!.pss);
  }
}

/** Restart, a `signet worker` beside `signet serve`, a SIGKILL and the start after it. */
async function lifecycle(app: string, run: Run): Promise<void> {
  const { store, dataDir, f } = run;
  process.stderr.write(`${LABEL[store]}: restart\n`);
  await stop(run.serve);
  f['postgres processes after SIGTERM'] = String(postgresPids(dataDir).length);
  let t = Date.now();
  run.serve = startServer(app, dataDir, store, 'serve');
  f['start, restart, ms'] = String(await untilHealthy(run.serve, t));

  process.stderr.write(`${LABEL[store]}: signet worker beside signet serve\n`);
  const worker = startServer(app, dataDir, store, 'worker');
  const deadline = Date.now() + 60_000;
  while (!/worker \S+ started/.test(worker.output()) && worker.child.exitCode === null && Date.now() < deadline) await sleep(50);
  const masters = [...processTable()].filter(([, p]) => p.cmd.includes(`-D ${path.join(dataDir, 'pg', 'data')}`)).length;
  f['signet worker beside serve'] = /worker \S+ started/.test(worker.output())
    ? store === 'postgres'
      ? `joined (${masters} postmaster)`
      : 'started: a second PGlite on the same files, no locking between them'
    : `did not start: ${worker.output().trim().split('\n').pop()}`;
  await stop(worker);

  process.stderr.write(`${LABEL[store]}: SIGKILL\n`);
  await stop(run.serve, 'SIGKILL');
  const left = postgresPids(dataDir).length;
  await sleep(3_000);
  f['postgres processes after SIGKILL: at once / 3 s later'] = `${left} / ${postgresPids(dataDir).length}`;
  t = Date.now();
  run.serve = startServer(app, dataDir, store, 'serve');
  const afterKill = await untilHealthy(run.serve, t);
  const account = await fetch(`${run.serve.base()}/v1/account`, { headers: { authorization: `Bearer ${run.apiKey}` } });
  f['start after SIGKILL, ms (data there)'] = `${afterKill} (${account.status === 200 ? 'yes' : `GET /v1/account ${account.status}`})`;
  await stop(run.serve);
  f['postgres processes after the last SIGTERM'] = String(postgresPids(dataDir).length);
}

async function tearDown(run: Run): Promise<void> {
  await stop(run.serve, 'SIGKILL');
  // A run that failed half-way: stop its server (fast shutdown) before removing the directory.
  for (const [pid, p] of processTable()) if (p.cmd.includes(`-D ${path.join(run.dataDir, 'pg', 'data')}`)) process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 30_000;
  while (postgresPids(run.dataDir).length && Date.now() < deadline) await sleep(100);
  rmSync(run.dataDir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const app = build();
  const upload = await createAndSendBody();
  const who = runAs ? `user ${asUser} (uid ${runAs.uid})` : `uid ${process.getuid?.()}`;
  console.log(`Embedded store bench: Node ${process.version}, ${os.cpus().length} CPUs, servers as ${who}, ${duration} s per load`);
  console.log(`Load average before: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const runs: Run[] = [];
  try {
    for (const store of STORES) runs.push(await setUp(app, store));
    await loads(runs, upload);
    for (const run of runs) await lifecycle(app, run);
  } finally {
    for (const run of runs) await tearDown(run);
    rmSync(app, { recursive: true, force: true });
  }
  console.log(`Load average after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  const col = (store: Store) => runs.find((r) => r.store === store)?.f ?? {};
  const rows = Object.keys(runs[0].f);
  const width = Math.max(...rows.map((r) => r.length));
  console.log(`| ${'measure'.padEnd(width)} | ${LABEL.pglite} | ${LABEL.postgres} |`);
  console.log(`|${'-'.repeat(width + 2)}|---|---|`);
  for (const row of rows) console.log(`| ${row.padEnd(width)} | ${col('pglite')[row] ?? ''} | ${col('postgres')[row] ?? ''} |`);
  writeFileSync(path.join(os.tmpdir(), `embedded-db-bench-${asUser ?? 'self'}.json`), JSON.stringify(Object.fromEntries(runs.map((r) => [r.store, r.f])), null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
