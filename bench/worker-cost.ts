/**
 * `npx tsx bench/worker-cost.ts` (PostgreSQL: DATABASE_URL): what the jobs of one create-and-send cost,
 * apart from the request. An API node (`signet serve`, WORKER_ENABLED=false) takes BENCH_WORKER_ENVELOPES
 * create-and-sends (1 page, 2 signers, 8 at a time) while a separate `signet worker`, idle for 3 s before,
 * runs their jobs (the distribution and two invitations written to the outbox); once the queue is empty,
 * it prints the worker process's CPU per envelope and that of the PostgreSQL backends serving the worker
 * (its pool and its LISTEN connection), from /proc. The npm start rows measure the same jobs inside the
 * server, where the request's share and the jobs' cannot be told apart.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { processCpuMs } from './cpu.js';
import { createAndSendBody, textPdf } from './requests.js';
import { OPS_TOKEN, ROOT, createCustomer, freshSchema, serveCommand, startProcess } from './servers.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('bench/worker-cost.ts needs DATABASE_URL (PostgreSQL)');
const envelopes = Number(process.env.BENCH_WORKER_ENVELOPES ?? 400);
const WORKER_APP = 'signet-bench-worker';

const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-bench-worker-'));
const schema = await freshSchema(databaseUrl, 'bench_worker');
const env = { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, DATABASE_URL: schema.url, LOG_LEVEL: 'info', OPS_TOKEN, RATE_LIMIT_MAX: '1000000000' };
const { args } = serveCommand();
const api = await startProcess('signet serve (API node)', args, { ...env, WORKER_ENABLED: 'false' });
const logFd = openSync(path.join(dataDir, 'worker.log'), 'w');
const worker = spawn(process.execPath, [args[0], 'worker'], { cwd: ROOT, env: { ...process.env, ...env, DATABASE_URL: `${schema.url}&application_name=${WORKER_APP}` }, stdio: ['ignore', logFd, logFd] });
closeSync(logFd);
const client = new pg.Client({ connectionString: schema.url });
await client.connect();
try {
  const c = { base: api.base, ...(await createCustomer(api.base)) };
  const upload = await createAndSendBody(await textPdf(1));
  await sleep(3000);
  /** The worker's backends: its pool's and its LISTEN connection's (named after the schema). */
  const backends = async () =>
    (await client.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name IN ($1, $2)`, [WORKER_APP, `signet listen ${schema.schema}`])).rows.map((r) => r.pid);
  const dbBefore = new Map((await backends()).map((pid) => [pid, processCpuMs(pid)]));
  const workerBefore = processCpuMs(worker.pid!);
  const started = performance.now();
  let sent = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (sent < envelopes) {
        sent++;
        const res = await fetch(`${c.base}/v1/envelopes`, { method: 'POST', headers: { authorization: `Bearer ${c.apiKey}`, 'content-type': upload.contentType, 'idempotency-key': randomUUID() }, body: new Uint8Array(upload.body) });
        if (res.status !== 201) throw new Error(`POST /v1/envelopes answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
      }
    }),
  );
  const loaded = performance.now();
  for (;;) {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM jobs WHERE status IN ('queued', 'running') AND type <> 'periodic'`);
    if (Number(rows[0].n) === 0) break;
    await sleep(20);
  }
  const workerMs = processCpuMs(worker.pid!) - workerBefore;
  let dbMs = 0;
  for (const pid of await backends()) dbMs += processCpuMs(pid) - (dbBefore.get(pid) ?? 0);
  const { rows: done } = await client.query<{ type: string; n: string }>(`SELECT type, count(*) AS n FROM jobs WHERE status = 'done' AND type <> 'periodic' GROUP BY type ORDER BY type`);
  console.log(`${envelopes} create-and-sends in ${((loaded - started) / 1000).toFixed(1)} s, the queue empty ${((performance.now() - loaded) / 1000).toFixed(1)} s after (${done.map((r) => `${r.type} ${r.n}`).join(', ')})`);
  console.log(`worker CPU per envelope: ${(workerMs / envelopes).toFixed(2)} ms; its PostgreSQL backends: ${(dbMs / envelopes).toFixed(2)} ms`);
} finally {
  worker.kill('SIGTERM');
  await new Promise((resolve) => worker.once('exit', resolve));
  await client.end();
  await api.stop();
  await schema.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
