/**
 * Webhook delivery benchmark, on PostgreSQL with a local receiver on 127.0.0.1:
 * - throughput: N deliveries (default 2,000) are enqueued first, then one or two worker processes
 *   (`signet worker` as test/fixtures/webhook-worker.ts runs it, default settings) are let go; the
 *   clock stops when the last delivery is recorded SUCCESS;
 * - lag: with one worker running, 100 events per second for ~10 s, each committed in its own
 *   transaction; lag is the time from the commit returning to the first attempt arriving.
 *
 * Events are fanned out with the same webhooks.fanOut the envelope transitions call, inside their own
 * transaction; creating real envelopes would measure the PDF pipeline instead.
 *
 * Standalone: `DATABASE_URL=postgres://… tsx bench/webhooks.ts`; bench/run.ts calls benchWebhooks().
 *   BENCH_WEBHOOK_N         deliveries for the throughput runs (default 2000)
 *   BENCH_WEBHOOK_RATE      events per second for the lag run (default 100)
 *   BENCH_WEBHOOK_SECONDS   length of the lag run (default 10)
 *   BENCH_WEBHOOK_NODE_ARGS extra node flags for the worker processes, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { sql } from 'drizzle-orm';
import { loadConfig } from '../src/config.js';
import { openDatabase, rowsOf } from '../src/db/client.js';
import { bearer, createTestApp, type TestApp } from '../test/harness.js';
import { startReceiver, type Receiver, type ReceiverOptions } from '../test/fixtures/receiver.js';
import { spawnWorker, type WorkerProcess } from '../test/fixtures/worker-process.js';

export type WebhookBenchRow = { name: string; value: number; unit: string; goal: string; met: boolean | undefined };

const now = () => performance.timeOrigin + performance.now();
const nodeArgs = (process.env.BENCH_WEBHOOK_NODE_ARGS ?? '').split(' ').filter(Boolean);

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

type Setup = { t: TestApp; webhookId: string; receiver: Receiver; dataDir: string; schema: string; close(): Promise<void> };

/** A fresh schema with one customer and one '*' registration pointing at a fresh receiver. */
async function setup(databaseUrl: string, onRequest: ReceiverOptions['onRequest']): Promise<Setup> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-bench-wh-'));
  const schema = `bench_wh_${randomBytes(6).toString('hex')}`;
  const database = await openDatabase({ databaseUrl, dataDir, poolSize: 10, schemaName: schema });
  const t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' }, overrides: { database } });
  // The bench only counts: no request is kept in memory.
  const receiver = await startReceiver({ record: false, onRequest });
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/webhooks',
    headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' },
    payload: JSON.stringify({ url: receiver.url(), events: ['*'] }),
  });
  if (res.statusCode !== 201) throw new Error(`register webhook: ${res.statusCode} ${res.body}`);
  return {
    t,
    webhookId: res.json().id,
    receiver,
    dataDir,
    schema,
    async close() {
      await receiver.close();
      await t.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** `count` events in one transaction, as an envelope transition writes them; `tag` lands in the body's envelope title. */
async function emit(s: Setup, count: number, tag: (i: number) => string): Promise<void> {
  const owner = { customerId: s.t.customer.id, mode: 'live' as const };
  await s.t.container.db.transaction(async (tx) => {
    for (let i = 0; i < count; i++) {
      const envelopeId = randomUUID();
      const createdAt = new Date().toISOString();
      await s.t.container.webhooks.fanOut(tx, {
        owner,
        envelopeId,
        eventId: null,
        event: 'envelope.sent',
        occurredAt: new Date(),
        payload: async () => ({ envelope: { envelopeId, engineEnvelopeId: envelopeId, status: 'PENDING', title: tag(i), recipients: [], createdAt }, recipient: null }),
      });
    }
  });
}

async function succeeded(s: Setup): Promise<{ success: number; other: number }> {
  const rows = rowsOf<{ status: string; n: string | number }>(
    await s.t.container.db.execute(sql`SELECT status, count(*) AS n FROM webhook_deliveries WHERE webhook_id = ${s.webhookId} GROUP BY status`),
  );
  const success = Number(rows.find((r) => r.status === 'SUCCESS')?.n ?? 0);
  return { success, other: rows.reduce((n, r) => n + (r.status === 'SUCCESS' ? 0 : Number(r.n)), 0) };
}

async function throughput(databaseUrl: string, workers: number, n: number): Promise<{ perSecond: number; seconds: number; concurrency: number }> {
  let received = 0;
  const s = await setup(databaseUrl, () => void received++);
  const procs: WorkerProcess[] = [];
  try {
    for (let done = 0; done < n; done += 200) await emit(s, Math.min(200, n - done), (i) => `bulk ${done + i}`);
    // WORKER_CONCURRENCY from the environment reaches the workers; otherwise they run the default.
    const env = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', ...(process.env.WORKER_CONCURRENCY ? { WORKER_CONCURRENCY: process.env.WORKER_CONCURRENCY } : {}) };
    const concurrency = loadConfig({ ...env, DATA_DIR: s.dataDir }).workerConcurrency;
    for (let i = 0; i < workers; i++) procs.push(await spawnWorker({ dataDir: s.dataDir, databaseUrl, schema: s.schema, env, waitForStart: true, nodeArgs }));
    const started = now();
    await Promise.all(procs.map((p) => p.start()));
    const deadline = Date.now() + 120_000;
    for (;;) {
      const { success, other } = await succeeded(s);
      if (success === n) break;
      if (Date.now() > deadline) throw new Error(`throughput: ${success}/${n} delivered after 120 s (${other} not yet)`);
      await sleep(received >= n ? 5 : 20);
    }
    const seconds = (now() - started) / 1000;
    if (received !== n) throw new Error(`throughput: the receiver saw ${received} requests for ${n} deliveries`);
    return { perSecond: n / seconds, seconds, concurrency };
  } finally {
    await Promise.all(procs.map((p) => p.kill('SIGTERM')));
    await s.close();
  }
}

async function lag(databaseUrl: string, rate: number, seconds: number): Promise<{ p50: number; p99: number; max: number; events: number }> {
  const total = Math.round(rate * seconds);
  const committedAt = new Map<number, number>();
  const arrivedAt = new Map<number, number>();
  let warmedUp = 0;
  const s = await setup(databaseUrl, (req) => {
    const title: string = JSON.parse(req.raw.toString('utf8')).envelope?.title ?? '';
    if (title.startsWith('warmup ')) return void warmedUp++;
    const seq = Number(/^lag (\d+)$/.exec(title)?.[1]);
    if (!arrivedAt.has(seq)) arrivedAt.set(seq, req.receivedAtPrecise);
  });
  let proc: WorkerProcess | undefined;
  try {
    proc = await spawnWorker({ dataDir: s.dataDir, databaseUrl, schema: s.schema, env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' }, nodeArgs });
    // Warm-up (not measured): the worker's first deliveries pay for module loading and JIT.
    const WARMUP = 50;
    for (let i = 0; i < WARMUP; i++) await emit(s, 1, () => `warmup ${i}`);
    while (warmedUp < WARMUP) await sleep(10);
    // Events on a fixed timetable, each in its own transaction; a slow commit does not delay the next.
    const start = now() + 50;
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const wait = start + (i * 1000) / rate - now();
      if (wait > 0) await sleep(wait);
      inFlight.push(emit(s, 1, () => `lag ${i}`).then(() => void committedAt.set(i, now())));
    }
    await Promise.all(inFlight);
    const deadline = Date.now() + 30_000;
    while (arrivedAt.size < total) {
      if (Date.now() > deadline) throw new Error(`lag: ${arrivedAt.size}/${total} first attempts arrived`);
      await sleep(20);
    }
    const lags = [...committedAt].map(([i, at]) => arrivedAt.get(i)! - at).sort((a, b) => a - b);
    return { p50: percentile(lags, 50), p99: percentile(lags, 99), max: lags[lags.length - 1], events: total };
  } finally {
    await proc?.kill('SIGTERM');
    await s.close();
  }
}

export async function benchWebhooks(databaseUrl: string): Promise<WebhookBenchRow[]> {
  const n = Math.round(envNumber('BENCH_WEBHOOK_N', 2000));
  const rate = envNumber('BENCH_WEBHOOK_RATE', 100);
  const seconds = envNumber('BENCH_WEBHOOK_SECONDS', 10);
  const rows: WebhookBenchRow[] = [];
  for (const workers of [1, 2]) {
    process.stderr.write(`  webhooks: ${n} deliveries with ${workers} worker process(es)\n`);
    const r = await throughput(databaseUrl, workers, n);
    rows.push({
      name: `Webhook deliveries/s, ${workers} worker${workers > 1 ? 's' : ''} x ${r.concurrency} slots, ${n} queued`,
      value: r.perSecond,
      unit: '/s',
      goal: workers === 1 ? '>= 300/s' : '',
      met: workers === 1 ? r.perSecond >= 300 : undefined,
    });
  }
  process.stderr.write(`  webhooks: lag at ${rate} events/s for ${seconds} s\n`);
  const l = await lag(databaseUrl, rate, seconds);
  rows.push({ name: `Webhook lag, commit to first attempt, p50 (${l.events} events at ${rate}/s)`, value: l.p50, unit: 'ms', goal: '', met: undefined });
  rows.push({ name: `Webhook lag, commit to first attempt, p99`, value: l.p99, unit: 'ms', goal: '<= 250 ms', met: l.p99 <= 250 });
  rows.push({ name: `Webhook lag, commit to first attempt, max`, value: l.max, unit: 'ms', goal: '', met: undefined });
  return rows;
}

export function formatWebhookRows(rows: WebhookBenchRow[]): string {
  const lines = rows.map(
    (r) => `${r.name.padEnd(72)} ${r.value.toFixed(r.unit === 'ms' ? 1 : 0).padStart(8)} ${r.unit.padEnd(3)} ${r.goal.padEnd(10)} ${r.met === undefined ? '' : r.met ? 'met' : 'NOT MET'}`,
  );
  return [`${'Webhook scenario'.padEnd(72)} ${'value'.padStart(12)} goal`, ...lines].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('bench/webhooks.ts measures on PostgreSQL: set DATABASE_URL');
  console.log(formatWebhookRows(await benchWebhooks(url)));
}
