/**
 * Jobs are finite (DESIGN §4.16): a job that crashed its process counts as an attempt, ends dead past
 * its limit, and raises an operator alert; every dead job raises one, whatever killed it; an operator
 * can queue a dead job again.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { z } from 'zod';
import { openDatabase, rowsOf, type Database } from '../src/db/client.js';
import { auditLog, jobs, operatorAlerts } from '../src/db/schema/index.js';
import { claim, enqueue } from '../src/jobs/queue.js';
import { createWorker, type WorkerOptions } from '../src/jobs/worker.js';
import { OPS_TOKEN, S2S_KEY, bearer, createTestApp, openTestDatabase, testPgliteImage } from './harness.js';
import { assertError } from './fixtures/envelopes.js';
import { RUN_TS } from './fixtures/run-ts.js';

const silent = { info() {}, warn() {}, error() {} };
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

let dataDir: string;
let db: Database;
before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'signet-deadjobs-'));
  db = await openTestDatabase(dataDir);
  await db.migrate();
});
after(async () => {
  await db.close();
  await db.dropSchema?.();
  rmSync(dataDir, { recursive: true, force: true });
});

const uniqueType = (name: string) => `test.${name}.${randomBytes(4).toString('hex')}`;
const rowsOfType = (type: string, on = db) => on.db.select().from(jobs).where(eq(jobs.type, type)).orderBy(jobs.id);

async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

type Alert = { id: number; type: string; reason: string; cause: string };
async function withWorker(opts: Partial<WorkerOptions> & Pick<WorkerOptions, 'jobs'>, fn: (alerts: Alert[]) => Promise<void>): Promise<Alert[]> {
  const alerts: Alert[] = [];
  const w = createWorker({
    database: db,
    concurrency: 2,
    leaseMs: 30_000,
    intervalMs: 100,
    logger: silent,
    onDeadJob: async (_tx, job, reason, cause) => void alerts.push({ id: job.id, type: job.type, reason, cause }),
    ...opts,
  });
  await w.start();
  try {
    await fn(alerts);
  } finally {
    await w.stop();
  }
  return alerts;
}

test('a job whose holders died on its last attempt is not claimed again: it ends dead with a dead-job alert', async () => {
  const type = uniqueType('crashed');
  await db.db.transaction((tx) => enqueue(tx, { type, payload: {}, maxAttempts: 2 }));
  // Two workers took it and died holding it (no complete, no fail): each claim counted an attempt.
  const [first] = await claim(db.db, { workerId: 'crashed-1', types: [type], limit: 1, leaseMs: 100 });
  assert.equal(first?.attempts, 1);
  await sleep(200);
  const [second] = await claim(db.db, { workerId: 'crashed-2', types: [type], limit: 1, leaseMs: 100 });
  assert.equal(second?.attempts, 2, 'a lapsed job with attempts left is taken over');
  await sleep(200);
  assert.deepEqual(await claim(db.db, { workerId: 'crashed-3', types: [type], limit: 1, leaseMs: 100 }), [], 'a lapsed job with its attempts spent is not handed out');

  const ran: unknown[] = [];
  const alerts = await withWorker({ jobs: [{ type, payload: z.unknown(), handle: async (p) => void ran.push(p) }] }, async () => {
    await waitFor(async () => (await rowsOfType(type))[0]?.status === 'dead', 3_000, 'the job to end dead');
  });
  assert.deepEqual(ran, [], 'the handler never ran a third time');
  const [row] = await rowsOfType(type);
  assert.equal(row!.attempts, 2);
  assert.equal(row!.lockedBy, null);
  assert.match(row!.lastError!, /lease lapsed/);
  assert.deepEqual(alerts.map((a) => [a.id, a.type, a.cause]), [[row!.id, type, 'crashed']]);
});

test('a job that fails its last attempt raises the dead-job alert once; a definition that alerts on its own gets none for that failure', async () => {
  const plain = uniqueType('failing');
  const own = uniqueType('own-alert');
  const fails = async () => {
    throw new Error('always broken');
  };
  const alerts = await withWorker(
    {
      jobs: [
        { type: plain, payload: z.unknown(), handle: fails },
        { type: own, payload: z.unknown(), handle: fails, raisesOwnFailureAlert: true },
      ],
    },
    async () => {
      await db.db.transaction(async (tx) => {
        await enqueue(tx, { type: plain, payload: {}, maxAttempts: 1 });
        await enqueue(tx, { type: own, payload: {}, maxAttempts: 1 });
      });
      await waitFor(async () => (await rowsOfType(plain))[0]?.status === 'dead' && (await rowsOfType(own))[0]?.status === 'dead', 3_000, 'both jobs to end dead');
    },
  );
  const [row] = await rowsOfType(plain);
  assert.deepEqual(alerts.map((a) => [a.id, a.type, a.cause]), [[row!.id, plain, 'failed']]);
  assert.match(alerts[0]!.reason, /always broken/);
});

/** A database the test and its worker processes share: a PGlite directory (one process at a time) or a PostgreSQL schema. */
async function sharedDatabase() {
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-poison-'));
  const url = process.env.DATABASE_URL;
  const schema = url ? `t_poison_${randomBytes(6).toString('hex')}` : undefined;
  const open = (): Promise<Database> => (url ? openDatabase({ databaseUrl: url, dataDir: dir, poolSize: 4, schemaName: schema }) : testPgliteImage().then((pgliteImage) => openDatabase({ dataDir: dir, pgliteImage })));
  return { dir, url, schema, open };
}

/** Runs test/fixtures/poison-worker.ts until `until` says so or it dies; returns its output and how it ended. */
async function runPoisonWorker(shared: Awaited<ReturnType<typeof sharedDatabase>>, type: string, stopAfterMs: number) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  delete env.DATABASE_URL;
  Object.assign(env, {
    DATA_DIR: shared.dir,
    OPS_TOKEN,
    S2S_KEY,
    JWT_SECRET: 'j'.repeat(64),
    LOG_LEVEL: 'silent',
    PUBLIC_URL: 'http://signet.test',
    JOB_LEASE_MS: '1000',
    SCHEDULER_INTERVAL_MS: '100',
    POISON_JOB_TYPE: type,
    ...(shared.url ? { DATABASE_URL: shared.url, WORKER_SCHEMA: shared.schema } : {}),
  });
  const proc = spawn(process.execPath, [...RUN_TS, path.join(ROOT, 'test', 'fixtures', 'poison-worker.ts')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  createInterface({ input: proc.stdout! }).on('line', (l) => output.push(l));
  createInterface({ input: proc.stderr! }).on('line', (l) => output.push(`[stderr] ${l}`));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => proc.once('exit', (code, signal) => resolve(signal ?? code)));
  // Once started, give it `stopAfterMs` to take the job (and die of it), then stop it gracefully.
  const timer = (async () => {
    const deadline = Date.now() + 60_000;
    while (!output.includes('STARTED') && proc.exitCode === null && proc.signalCode === null && Date.now() < deadline) await sleep(50);
    await sleep(stopAfterMs);
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
  })();
  const ended = await exited;
  await timer;
  return { output, ended };
}

test('a poison job that SIGKILLs every worker process taking it is buried after max_attempts crashes, with an operator alert', { timeout: 180_000 }, async () => {
  const shared = await sharedDatabase();
  const type = uniqueType('poison');
  let jobId: number;
  {
    const d = await shared.open();
    await d.migrate();
    await d.db.transaction((tx) => enqueue(tx, { type, payload: {}, maxAttempts: 2 }));
    jobId = (await rowsOfType(type, d))[0]!.id;
    await d.close();
  }
  try {
    // Each of the first two processes takes the job (its lease lapsed after the previous crash) and dies.
    for (const attempt of [1, 2]) {
      const run = await runPoisonWorker(shared, type, 5_000);
      assert.equal(run.ended, 'SIGKILL', `worker ${attempt} died of the job; output:\n${run.output.join('\n')}`);
      assert.ok(run.output.includes(`RUNNING ${jobId} ${attempt}`), run.output.join('\n'));
    }
    // The third finds the job's attempts spent: it buries it instead of running it, and stays up.
    const third = await runPoisonWorker(shared, type, 2_500);
    assert.equal(third.ended, 0, `the third worker was not killed; output:\n${third.output.join('\n')}`);
    assert.ok(!third.output.some((l) => l.startsWith('RUNNING')), third.output.join('\n'));

    const d = await shared.open();
    try {
      const [row] = await rowsOfType(type, d);
      assert.equal(row!.status, 'dead');
      assert.equal(row!.attempts, 2);
      const alerts = await d.db.select().from(operatorAlerts).where(eq(operatorAlerts.resourceId, String(jobId)));
      assert.deepEqual(alerts.map((a) => [a.kind, a.resourceType]), [['job_dead', 'job']]);
      assert.match(alerts[0]!.message, new RegExp(type.replaceAll('.', '\\.')));
    } finally {
      await d.close();
      await d.dropSchema?.();
    }
  } finally {
    rmSync(shared.dir, { recursive: true, force: true });
  }
});

test('POST /ops/jobs/{id}/retry queues a dead job again with its attempts reset; anything else is refused', async () => {
  const t = await createTestApp();
  try {
    const type = uniqueType('ops-retry');
    await t.container.db.transaction((tx) => enqueue(tx, { type, payload: { n: 1 }, maxAttempts: 3 }));
    const [queued] = rowsOf<{ id: string | number }>(await t.container.db.execute(sql`SELECT id FROM jobs WHERE type = ${type}`));
    const id = Number(queued!.id);
    const retry = (jobId: string | number, headers = bearer(OPS_TOKEN)) => t.app.inject({ method: 'POST', url: `/ops/jobs/${jobId}/retry`, headers });

    assert.equal((await retry(id, {} as ReturnType<typeof bearer>)).statusCode, 401);
    assertError(await retry(id), 409, 'JOB_NOT_DEAD');
    assertError(await retry(99_999_999), 404, 'JOB_NOT_FOUND');
    assertError(await retry('abc'), 400, 'VALIDATION_ERROR');

    await t.container.db.execute(sql`UPDATE jobs SET status = 'dead', attempts = 3, last_error = 'boom' WHERE id = ${id}`);
    const res = await retry(id);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { jobId: id, type, status: 'queued' });
    const [row] = await t.container.db.select().from(jobs).where(eq(jobs.id, id));
    assert.equal(row!.status, 'queued');
    assert.equal(row!.attempts, 0);
    assert.equal(row!.lastError, 'boom', 'the last error stays for the record until the next attempt');
    assert.ok(row!.runAt.getTime() <= Date.now() + 1_000);
    const audits = await t.container.db.select().from(auditLog).where(eq(auditLog.resourceId, String(id)));
    assert.deepEqual(audits.map((a) => [a.action, a.resourceType]), [['job.retry', 'job']]);
    assertError(await retry(id), 409, 'JOB_NOT_DEAD');
  } finally {
    await t.close();
  }
});
