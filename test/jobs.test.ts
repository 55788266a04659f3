import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { openDatabase, rowsOf, type Database } from '../src/db/client.js';
import { jobs } from '../src/db/schema/index.js';
import { MAX_JOB_LEASE_MS, MAX_RETRY_DELAY_MS } from '../src/config-durations.js';
import { loadConfig } from '../src/config.js';
import { claim, complete, enqueue, fail, takePeriod } from '../src/jobs/queue.js';
import { createWorker, type JobDefinition, type PeriodicTask, type Worker, type WorkerOptions } from '../src/jobs/worker.js';
import { z } from 'zod';
import { openTestDatabase } from './harness.js';

const silent = { info() {}, warn() {}, error() {} };

/**
 * Two handles on one database. On PostgreSQL they are two separate pools on the same schema, as two
 * worker processes would be; PGlite has a single connection, so both names point at the same instance.
 *
 * So the tests marked "proven on PostgreSQL" prove what they claim across connections (SKIP LOCKED,
 * leases, the advisory lock) only when DATABASE_URL is set: on PGlite the two workers' statements and
 * transactions are serialized on the one connection, and those tests show only that the worker logic
 * is right when nothing runs truly side by side. CI runs this file on PostgreSQL as well; keep it so.
 */
let dataDir: string;
let dbA: Database;
let dbB: Database;
/** The schema of this run on PostgreSQL. */
let currentSchema = '';

before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'signet-jobs-'));
  const url = process.env.DATABASE_URL;
  if (url) {
    currentSchema = `t_${randomBytes(6).toString('hex')}`;
    dbA = await openDatabase({ databaseUrl: url, dataDir, poolSize: 10, schemaName: currentSchema });
    dbB = await openDatabase({ databaseUrl: url, dataDir, poolSize: 10, schemaName: currentSchema });
  } else {
    dbA = await openTestDatabase(dataDir);
    dbB = dbA;
  }
  await dbA.migrate();
});

after(async () => {
  if (dbB !== dbA) await dbB.close();
  await dbA.close();
  await dbA.dropSchema?.();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Workers started by a test; stopped in `finally` even when an assertion throws. */
const started: Worker[] = [];
async function startWorker(opts: Partial<WorkerOptions> & Pick<WorkerOptions, 'jobs'>): Promise<Worker> {
  const w = createWorker({ database: dbA, concurrency: 4, leaseMs: 30_000, intervalMs: 60_000, logger: silent, ...opts });
  started.push(w);
  await w.start();
  return w;
}
async function stopAll(): Promise<void> {
  await Promise.all(started.splice(0).map((w) => w.stop()));
}

/** `database` with its worker's claims counted (the one statement with SKIP LOCKED, run prepared). */
/**
 * `database` with its worker's claims counted (the one statement with SKIP LOCKED, run prepared), and
 * its completions sent on their own (not with a claim).
 */
function countingClaims(database: Database): { database: Database; claims: number; completions: number } {
  const counter = { database, claims: 0, completions: 0 };
  type Session = { prepareQuery(q: { sql: string }, ...rest: unknown[]): unknown };
  const session = (database.db as unknown as { session: Session }).session;
  const countingSession = new Proxy(session, {
    get(target, prop) {
      if (prop === 'prepareQuery')
        return (q: { sql: string }, ...rest: unknown[]) => {
          if (q.sql.includes('SKIP LOCKED')) counter.claims++;
          else if (q.sql.includes("status = 'done'")) counter.completions++;
          return target.prepareQuery(q, ...rest);
        };
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const db = new Proxy(database.db, {
    get(target, prop) {
      if (prop === 'session') return countingSession;
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  counter.database = { ...database, db };
  return counter;
}

/** A job type no other test uses, so each test sees only its own rows. */
const uniqueType = (name: string) => `test.${name}.${randomBytes(4).toString('hex')}`;

async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

const rowsOfType = (type: string, db = dbA) => db.db.select().from(jobs).where(eq(jobs.type, type)).orderBy(jobs.id);

async function enqueueCommitted(type: string, payload: unknown, extra: { dedupeKey?: string; maxAttempts?: number } = {}) {
  await dbA.db.transaction((tx) => enqueue(tx, { type, payload, ...extra }));
}

test('a job enqueued in a transaction that rolls back does not exist', async () => {
  const type = uniqueType('rollback');
  let seenInside = -1;
  await assert.rejects(
    dbA.db.transaction(async (tx) => {
      await enqueue(tx, { type, payload: { n: 1 } });
      seenInside = (await tx.select().from(jobs).where(eq(jobs.type, type))).length;
      throw new Error('roll back');
    }),
    /roll back/,
  );
  assert.equal(seenInside, 1, 'the row exists inside the transaction');
  assert.deepEqual(await rowsOfType(type), []);
});

test('a committed job wakes an idle worker through NOTIFY, long before the scheduler interval', async () => {
  const type = uniqueType('notify');
  const seen: { payload: unknown; attempt: number; maxAttempts: number; at: number }[] = [];
  await startWorker({
    jobs: [{ type, payload: z.unknown(), handle: async (payload, ctx) => void seen.push({ payload, attempt: ctx.attempt, maxAttempts: ctx.maxAttempts, at: performance.now() }) }],
    intervalMs: 60_000,
  });
  try {
    // Let the first tick (at start) finish, so only a wake-up can find the next job.
    await sleep(400);
    const committedAt = performance.now();
    await enqueueCommitted(type, { hello: 'world' }, { maxAttempts: 3 });
    await waitFor(() => seen.length === 1, 2_000, 'the worker to run the job');
    assert.ok(seen[0]!.at - committedAt < 2_000);
    assert.deepEqual(seen.map(({ payload, attempt, maxAttempts }) => ({ payload, attempt, maxAttempts })), [
      { payload: { hello: 'world' }, attempt: 1, maxAttempts: 3 },
    ]);
    await waitFor(async () => (await rowsOfType(type))[0]?.status === 'done', 2_000, 'the job to be marked done');
    const [row] = await rowsOfType(type);
    assert.equal(row!.attempts, 1);
    assert.equal(row!.lockedBy, null);
    assert.equal(row!.lockedUntil, null);
    assert.equal(row!.lastError, null);
  } finally {
    await stopAll();
  }
});

test('a second enqueue with the same dedupeKey is a no-op', async () => {
  const type = uniqueType('dedupe');
  const key = `dedupe-${randomBytes(4).toString('hex')}`;
  await enqueueCommitted(type, { n: 1 }, { dedupeKey: key });
  await enqueueCommitted(type, { n: 2 }, { dedupeKey: key });
  // Also within a single transaction.
  await dbA.db.transaction(async (tx) => {
    await enqueue(tx, { type, payload: { n: 3 }, dedupeKey: key });
    await enqueue(tx, { type, payload: { n: 4 }, dedupeKey: `${key}-other` });
  });
  const rows = await rowsOfType(type);
  assert.deepEqual(
    rows.map((r) => ({ payload: r.payload, dedupeKey: r.dedupeKey, status: r.status })),
    [
      { payload: { n: 1 }, dedupeKey: key, status: 'queued' },
      { payload: { n: 4 }, dedupeKey: `${key}-other`, status: 'queued' },
    ],
  );

  // The deduplicated job runs once.
  const ran: unknown[] = [];
  await startWorker({ jobs: [{ type, payload: z.unknown(), handle: async (p) => void ran.push(p) }] });
  try {
    await waitFor(async () => (await rowsOfType(type)).every((r) => r.status === 'done'), 3_000, 'both jobs done');
    assert.deepEqual(ran.sort((a, b) => (a as { n: number }).n - (b as { n: number }).n), [{ n: 1 }, { n: 4 }]);
  } finally {
    await stopAll();
  }
});

test('a failing handler is retried with backoff, then ends dead with lastError', async () => {
  const type = uniqueType('failing');
  const attempts: { attempt: number; maxAttempts: number; at: number }[] = [];
  const warns: object[] = [];
  const errors: object[] = [];
  const logger = { info() {}, warn: (o: object) => void warns.push(o), error: (o: object) => void errors.push(o) };
  await startWorker({
    jobs: [
      {
        type,
        payload: z.unknown(),
        handle: async (_p, ctx) => {
          attempts.push({ attempt: ctx.attempt, maxAttempts: ctx.maxAttempts, at: performance.now() });
          throw new Error(`boom ${ctx.attempt}`);
        },
      },
    ],
    intervalMs: 100,
    logger,
  });
  try {
    await enqueueCommitted(type, {}, { maxAttempts: 2 });
    await waitFor(async () => (await rowsOfType(type))[0]?.status === 'queued' && attempts.length === 1, 3_000, 'the first failure');
    // After the first failure the job is queued again, for about 2 s later (2^1 s, +-20% jitter).
    const [afterFirst] = await rowsOfType(type);
    assert.equal(afterFirst!.attempts, 1);
    assert.equal(afterFirst!.lastError, 'boom 1');
    assert.equal(afterFirst!.lockedBy, null);
    const delayMs = afterFirst!.runAt.getTime() - afterFirst!.updatedAt.getTime();
    assert.ok(delayMs >= 1_500 && delayMs <= 2_500, `retry scheduled ${delayMs} ms after the failure`);

    await waitFor(async () => (await rowsOfType(type))[0]?.status === 'dead', 5_000, 'the job to go dead');
    assert.deepEqual(attempts.map(({ attempt, maxAttempts }) => ({ attempt, maxAttempts })), [
      { attempt: 1, maxAttempts: 2 },
      { attempt: 2, maxAttempts: 2 },
    ]);
    const gap = attempts[1]!.at - attempts[0]!.at;
    assert.ok(gap >= 1_500, `second attempt ran ${gap} ms after the first (backoff ~2 s)`);
    const [dead] = await rowsOfType(type);
    assert.equal(dead!.attempts, 2);
    assert.equal(dead!.lastError, 'boom 2');
    assert.equal(dead!.lockedBy, null);
    assert.equal(dead!.lockedUntil, null);

    // A dead job is not picked up again.
    await sleep(300);
    assert.equal(attempts.length, 2);
    assert.deepEqual(warns.map((w) => (w as { outcome: string }).outcome), ['retry']);
    assert.deepEqual(errors.map((e) => (e as { outcome: string; err: string }).outcome), ['dead']);
  } finally {
    await stopAll();
  }
});

// Proven on PostgreSQL: the dead worker's claim and the takeover run on two pools. On PGlite both
// share one connection; the lease predicate (live lease not claimable, lapsed one is) still holds.
test('a job whose worker died is picked up by another worker once its lease lapses (proven on PostgreSQL)', async () => {
  const type = uniqueType('lease');
  await enqueueCommitted(type, { n: 7 });
  const [claimed, ...more] = await claim(dbA.db, { workerId: 'dead-worker', types: [type], limit: 5, leaseMs: 1_000 });
  const claimedAt = performance.now();
  assert.equal(more.length, 0);
  assert.equal(claimed!.attempts, 1);
  const [held] = await rowsOfType(type);
  assert.equal(held!.status, 'running');
  assert.equal(held!.lockedBy, 'dead-worker');

  // A live lease is not claimable.
  assert.deepEqual(await claim(dbB.db, { workerId: 'other', types: [type], limit: 5, leaseMs: 1_000 }), []);

  const ran: { payload: unknown; attempt: number; at: number }[] = [];
  const w = await startWorker({
    database: dbB,
    jobs: [{ type, payload: z.unknown(), handle: async (payload, ctx) => void ran.push({ payload, attempt: ctx.attempt, at: performance.now() }) }],
    intervalMs: 100,
  });
  try {
    await sleep(400);
    assert.equal(ran.length, 0, 'not taken while the lease is live');
    await waitFor(() => ran.length === 1, 3_000, 'the other worker to take the job over');
    assert.ok(ran[0]!.at - claimedAt >= 800, 'taken over only after the lease lapsed');
    assert.deepEqual({ payload: ran[0]!.payload, attempt: ran[0]!.attempt }, { payload: { n: 7 }, attempt: 2 });
    await waitFor(async () => (await rowsOfType(type))[0]?.status === 'done', 2_000, 'the job to be done');
    const [done] = await rowsOfType(type);
    assert.equal(done!.attempts, 2);
    assert.equal(done!.lockedBy, null);

    // The dead worker coming back cannot complete or fail a job it no longer holds.
    assert.equal(await complete(dbA.db, claimed!.id, 'dead-worker'), false);
    await fail(dbA.db, claimed!, 'dead-worker', 'late failure', 0);
    const [still] = await rowsOfType(type);
    assert.equal(still!.status, 'done');
    assert.equal(still!.lastError, null);
    assert.equal(still!.attempts, 2);
    assert.ok(w.workerId.length > 0);
  } finally {
    await stopAll();
  }
});

// Proven on PostgreSQL: worker B polls through its own pool while A's heartbeat renews the lease. On
// PGlite both share one connection, so B's claims wait their turn behind A's renewals.
test('a running job keeps its lease by heartbeat and is not taken over while it runs (proven on PostgreSQL)', async () => {
  const type = uniqueType('heartbeat');
  const runs: string[] = [];
  let finished = false;
  await startWorker({
    jobs: [
      {
        type,
        payload: z.unknown(),
        handle: async () => {
          runs.push('A');
          await sleep(2_000);
          finished = true;
        },
      },
    ],
    leaseMs: 900,
    intervalMs: 60_000,
  });
  try {
    await enqueueCommitted(type, {});
    await waitFor(() => runs.length === 1, 2_000, 'worker A to start the job');
    await startWorker({ database: dbB, jobs: [{ type, payload: z.unknown(), handle: async () => void runs.push('B') }], leaseMs: 900, intervalMs: 100 });
    await waitFor(() => finished, 4_000, 'the long job to finish');
    await waitFor(async () => (await rowsOfType(type))[0]?.status === 'done', 2_000, 'the job to be done');
    await sleep(300);
    assert.deepEqual(runs, ['A']);
    const [row] = await rowsOfType(type);
    assert.equal(row!.attempts, 1);
  } finally {
    await stopAll();
  }
});

// Proven on PostgreSQL only: exactly-once there rests on FOR UPDATE SKIP LOCKED between two pools
// claiming at the same moment. On PGlite the claims are serialized on one connection, so this shows
// the worker's bookkeeping (concurrency, no overlap), not the claim's isolation.
test('two workers with concurrency 4 run 200 jobs, each exactly once, never two at a time (proven on PostgreSQL)', async () => {
  const type = uniqueType('many');
  const runs: { jobId: number; n: number; worker: 'A' | 'B' }[] = [];
  const active = new Set<number>();
  const overlaps: number[] = [];
  const inFlight = { A: 0, B: 0 };
  const maxInFlight = { A: 0, B: 0 };
  const def = (worker: 'A' | 'B'): JobDefinition => ({
    type,
    payload: z.unknown(),
    handle: async (payload, ctx) => {
      if (active.has(ctx.jobId)) overlaps.push(ctx.jobId);
      active.add(ctx.jobId);
      inFlight[worker]++;
      maxInFlight[worker] = Math.max(maxInFlight[worker], inFlight[worker]);
      await sleep(2 + Math.floor(Math.random() * 6));
      inFlight[worker]--;
      active.delete(ctx.jobId);
      runs.push({ jobId: ctx.jobId, n: (payload as { n: number }).n, worker });
    },
  });
  await startWorker({ database: dbA, jobs: [def('A')], concurrency: 4 });
  await startWorker({ database: dbB, jobs: [def('B')], concurrency: 4 });
  try {
    await sleep(300);
    await dbA.db.transaction(async (tx) => {
      for (let n = 0; n < 200; n++) await enqueue(tx, { type, payload: { n } });
    });
    await waitFor(async () => {
      const [r] = await dbA.db.select({ c: sql<number>`count(*)::int` }).from(jobs).where(and(eq(jobs.type, type), eq(jobs.status, 'done')));
      return r!.c === 200;
    }, 20_000, 'all 200 jobs done');
    await sleep(300);

    assert.deepEqual(overlaps, []);
    assert.equal(runs.length, 200);
    assert.equal(new Set(runs.map((r) => r.jobId)).size, 200);
    assert.deepEqual(runs.map((r) => r.n).sort((a, b) => a - b), Array.from({ length: 200 }, (_, i) => i));
    assert.ok(maxInFlight.A <= 4 && maxInFlight.B <= 4, `concurrency respected: ${JSON.stringify(maxInFlight)}`);
    assert.ok(maxInFlight.A > 1 || maxInFlight.B > 1, 'jobs ran concurrently');
    const byWorker = { A: runs.filter((r) => r.worker === 'A').length, B: runs.filter((r) => r.worker === 'B').length };
    assert.ok(byWorker.A > 0 && byWorker.B > 0, `both workers took jobs: ${JSON.stringify(byWorker)}`);

    const rows = await rowsOfType(type);
    assert.equal(rows.length, 200);
    assert.ok(rows.every((r) => r.status === 'done' && r.attempts === 1 && r.lockedBy === null));
  } finally {
    await stopAll();
  }
});

// Proven on PostgreSQL only: there the advisory lock keeps two pools' task transactions apart. On
// PGlite one connection runs one transaction at a time (and a session's advisory lock is re-entrant),
// so the lock itself is not what this run shows.
test('periodic tasks run on every scheduler tick, never concurrently across workers (proven on PostgreSQL)', async () => {
  const name = `periodic-${randomBytes(4).toString('hex')}`;
  const runs: { worker: string; start: number; end: number }[] = [];
  const task = (worker: string): PeriodicTask => ({
    name,
    run: async (tx) => {
      const start = performance.now();
      await tx.execute(sql`SELECT 1`);
      await sleep(60);
      runs.push({ worker, start, end: performance.now() });
    },
  });
  await startWorker({ database: dbA, jobs: [], periodic: [task('A')], intervalMs: 100 });
  await startWorker({ database: dbB, jobs: [], periodic: [task('B')], intervalMs: 100 });
  await sleep(1_300);
  await stopAll();
  const stoppedAt = performance.now();
  const count = runs.length;
  // Each worker ticks every ~160 ms (60 ms task + 100 ms interval); the lock only ever skips a tick.
  assert.ok(count >= 4, `ran ${count} times in 1.3 s`);
  const sorted = [...runs].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i++) {
    assert.ok(
      sorted[i]!.start >= sorted[i - 1]!.end,
      `run ${i} (${sorted[i]!.worker}) started at ${sorted[i]!.start.toFixed(1)} before run ${i - 1} (${sorted[i - 1]!.worker}) ended at ${sorted[i - 1]!.end.toFixed(1)}`,
    );
  }
  // Stopped workers start no more ticks.
  await sleep(300);
  assert.deepEqual(runs.filter((r) => r.start > stoppedAt), []);
});

test('stop() waits for a periodic task in progress to finish', async () => {
  const events: string[] = [];
  const w = await startWorker({
    jobs: [],
    periodic: [
      {
        name: `slow-${randomBytes(4).toString('hex')}`,
        run: async (tx) => {
          events.push('start');
          await sleep(400);
          await tx.execute(sql`SELECT 1`);
          events.push('end');
        },
      },
    ],
    intervalMs: 60_000,
  });
  try {
    // The first tick, at start, runs the task.
    await waitFor(() => events.length === 1, 2_000, 'the task to start');
    await w.stop();
    events.push('stopped');
    assert.deepEqual(events, ['start', 'end', 'stopped']);
  } finally {
    await stopAll();
    // Leave no task running against the shared database for the next test.
    await waitFor(() => events.includes('end'), 2_000, 'the task to end');
  }
});

test('a failing periodic task is rolled back and logged, and the scheduler keeps ticking', async () => {
  const type = uniqueType('periodic-rollback');
  let calls = 0;
  const warns: { task?: string; err?: string }[] = [];
  await startWorker({
    jobs: [],
    periodic: [
      {
        name: `failing-${type}`,
        run: async (tx) => {
          calls++;
          await enqueue(tx, { type, payload: {} });
          throw new Error('task broke');
        },
      },
    ],
    intervalMs: 50,
    logger: { info() {}, warn: (o: object) => void warns.push(o), error() {} },
  });
  try {
    await waitFor(() => calls >= 3, 2_000, 'three ticks');
  } finally {
    await stopAll();
  }
  assert.deepEqual(await rowsOfType(type), []);
  assert.ok(warns.length >= 3);
  assert.deepEqual(warns[0], { task: `failing-${type}`, err: 'task broke' });
});

test('the purge-done-jobs task deletes done jobs older than a week and keeps the rest', async () => {
  const type = uniqueType('purge');
  const dayMs = 24 * 3_600_000;
  const ago = (ms: number) => new Date(Date.now() - ms);
  const inserted = await dbA.db
    .insert(jobs)
    .values([
      { type, payload: { k: 'old-done' }, status: 'done', updatedAt: ago(8 * dayMs) },
      { type, payload: { k: 'recent-done' }, status: 'done', updatedAt: ago(6 * dayMs) },
      { type, payload: { k: 'old-dead' }, status: 'dead', updatedAt: ago(30 * dayMs) },
      { type, payload: { k: 'old-queued' }, status: 'queued', runAt: ago(-dayMs), updatedAt: ago(30 * dayMs) },
    ])
    .returning({ id: jobs.id });
  assert.equal(inserted.length, 4);
  // The first tick runs the periodic tasks at start.
  await startWorker({ jobs: [], intervalMs: 60_000 });
  try {
    await waitFor(async () => (await rowsOfType(type)).length === 3, 2_000, 'the old done job to be purged');
  } finally {
    await stopAll();
  }
  assert.deepEqual((await rowsOfType(type)).map((r) => r.payload), [{ k: 'recent-done' }, { k: 'old-dead' }, { k: 'old-queued' }]);
});

test('a payload that does not fit its schema ends the job dead at once with an alert; the handler never sees it', async () => {
  const type = uniqueType('invalid');
  const ran: unknown[] = [];
  const alerts: { id: number; type: string; reason: string }[] = [];
  await startWorker({
    jobs: [{ type, payload: z.object({ n: z.number() }), handle: async (p) => void ran.push(p) }],
    onDeadJob: async (_tx, job, reason) => void alerts.push({ id: job.id, type: job.type, reason }),
  });
  try {
    await enqueueCommitted(type, { n: 'one' }, { maxAttempts: 5 });
    await enqueueCommitted(type, { n: 2 });
    await waitFor(async () => (await rowsOfType(type)).every((r) => r.status === 'dead' || r.status === 'done'), 3_000, 'both jobs to end');
  } finally {
    await stopAll();
  }
  const rows = await rowsOfType(type);
  assert.deepEqual(rows.map((r) => [r.status, r.attempts]), [['dead', 1], ['done', 1]], 'no retry of the bad payload');
  assert.match(rows[0]!.lastError!, /invalid payload: n:/);
  assert.deepEqual(ran, [{ n: 2 }]);
  assert.deepEqual(alerts.map((a) => [a.id, a.type]), [[rows[0]!.id, type]]);
  assert.match(alerts[0]!.reason, /invalid payload/);
});

test('a job that never returns fails at its deadline: the attempt counts, its slot runs the next job, and the last attempt ends dead with an alert', { timeout: 60_000 }, async () => {
  const hung = uniqueType('hung');
  const next = uniqueType('after-hung');
  const started: number[] = [];
  const ran: number[] = [];
  const alerts: { id: number; cause: string; reason: string }[] = [];
  await startWorker({
    jobs: [
      // Never settles, as a handler stuck on a socket that never answers.
      { type: hung, payload: z.unknown(), timeoutMs: 300, handle: (_p, ctx) => (started.push(ctx.attempt), new Promise<void>(() => {})) },
      { type: next, payload: z.object({ n: z.number() }), handle: async ({ n }) => void ran.push(n) },
    ],
    onDeadJob: async (_tx, job, reason, cause) => void alerts.push({ id: job.id, cause, reason }),
    // One slot: the next job can only run once the hung one has given it up.
    concurrency: 1,
    intervalMs: 100,
  });
  try {
    await enqueueCommitted(hung, {}, { maxAttempts: 2 });
    await waitFor(() => started.length === 1, 3_000, 'the hung job to start');
    await enqueueCommitted(next, { n: 1 });
    await waitFor(() => ran.length === 1, 5_000, 'the next job to run in the slot the hung one held');
    const [afterFirst] = await rowsOfType(hung);
    assert.equal(afterFirst!.attempts, 1);
    assert.match(afterFirst!.lastError!, /deadline passed/);
    assert.equal(afterFirst!.lockedBy, null, 'not held by the worker any more');
    assert.notEqual(afterFirst!.status, 'running');

    // The retry (about 2 s later) hangs too: its attempts are spent, so it ends dead with the alert.
    await waitFor(async () => (await rowsOfType(hung))[0]?.status === 'dead', 10_000, 'the hung job to end dead');
  } finally {
    await stopAll();
  }
  const [dead] = await rowsOfType(hung);
  assert.equal(dead!.attempts, 2);
  assert.deepEqual(started, [1, 2]);
  assert.deepEqual(alerts.map((a) => [a.id, a.cause]), [[dead!.id, 'timed_out']]);
  assert.match(alerts[0]!.reason, /deadline passed: the job ran longer than 300 ms/);
});

test('stop() waits for the running job to finish and then claims nothing more', async () => {
  const type = uniqueType('graceful');
  const events: string[] = [];
  const w = await startWorker({
    jobs: [
      {
        type,
        payload: z.unknown(),
        handle: async (payload) => {
          events.push(`start ${(payload as { n: number }).n}`);
          await sleep(500);
          events.push(`end ${(payload as { n: number }).n}`);
        },
      },
    ],
    intervalMs: 100,
  });
  try {
    await enqueueCommitted(type, { n: 1 });
    await waitFor(() => events.length === 1, 2_000, 'the job to start');
    const stopStarted = performance.now();
    await w.stop();
    events.push('stopped');
    assert.ok(performance.now() - stopStarted >= 300, 'stop waited for the handler');
    assert.deepEqual(events, ['start 1', 'end 1', 'stopped']);
    const [first] = await rowsOfType(type);
    assert.equal(first!.status, 'done', 'the job was completed before stop() resolved');

    // A stopped worker neither wakes on NOTIFY nor ticks.
    await enqueueCommitted(type, { n: 2 });
    await sleep(500);
    assert.deepEqual(events, ['start 1', 'end 1', 'stopped']);
    const rows = await rowsOfType(type);
    assert.deepEqual(rows.map((r) => r.status), ['done', 'queued']);
  } finally {
    await stopAll();
  }
});

test('a worker claims once per wake-up: a claim that comes back short ends the round, and a full one is followed by another', async () => {
  const type = uniqueType('claims');
  const ran: number[] = [];
  const counted = countingClaims(dbA);
  await startWorker({ database: counted.database, jobs: [{ type, payload: z.object({ n: z.number() }), handle: async ({ n }) => void ran.push(n) }], concurrency: 4, intervalMs: 60_000 });
  try {
    await waitFor(() => counted.claims === 1, 2_000, 'the first tick to claim');
    await sleep(200);
    counted.claims = 0;
    // Three jobs in one commit: one NOTIFY, one claim (3 of 4 slots), and none after each job ends.
    await dbA.db.transaction((tx) => enqueue(tx, [1, 2, 3].map((n) => ({ type, payload: { n } }))));
    await waitFor(async () => (await rowsOfType(type)).every((r) => r.status === 'done'), 2_000, 'the three jobs to be done');
    await sleep(200);
    assert.equal(counted.claims, 1, `one claim for one wake-up, got ${counted.claims}`);

    // Six jobs: the first claim fills the 4 slots, so the queue may hold more and a finished job claims
    // again; without that, two of them would wait for the next tick (a minute away).
    counted.claims = 0;
    await dbA.db.transaction((tx) => enqueue(tx, [4, 5, 6, 7, 8, 9].map((n) => ({ type, payload: { n } }))));
    await waitFor(async () => (await rowsOfType(type)).every((r) => r.status === 'done'), 2_000, 'the six jobs to be done');
    assert.deepEqual([...ran].sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.ok(counted.claims >= 2 && counted.claims <= 4, `a full claim and the claims after it, got ${counted.claims}`);
  } finally {
    await stopAll();
  }
});

test("a job's completion travels with the claim that follows it: a busy queue costs one statement per job, not two", async () => {
  const type = uniqueType('completions');
  const ran: number[] = [];
  const counted = countingClaims(dbA);
  await startWorker({ database: counted.database, jobs: [{ type, payload: z.object({ n: z.number() }), handle: async ({ n }) => void ran.push(n) }], concurrency: 1, intervalMs: 60_000 });
  try {
    await waitFor(() => counted.claims === 1, 2_000, 'the first tick to claim');
    await sleep(200);
    counted.claims = 0;
    // One slot, three jobs: each claim is full, so each finished job claims again, and its completion
    // goes in that claim; the last claim comes back short and ends the round.
    await dbA.db.transaction((tx) => enqueue(tx, [1, 2, 3].map((n) => ({ type, payload: { n } }))));
    await waitFor(async () => (await rowsOfType(type)).every((r) => r.status === 'done'), 2_000, 'the three jobs to be done');
    await sleep(200);
    assert.deepEqual(ran, [1, 2, 3]);
    assert.equal(counted.claims, 4, `the NOTIFY's claim and one after each job, got ${counted.claims}`);
    assert.equal(counted.completions, 0, `no completion on its own, got ${counted.completions}`);
    for (const row of await rowsOfType(type)) assert.deepEqual([row.status, row.lockedBy, row.lockedUntil, row.attempts], ['done', null, null, 1]);
  } finally {
    await stopAll();
  }
});

test('a worker wakes for jobs queued in its own schema, not for another schema on the same database', async (t) => {
  const url = process.env.DATABASE_URL;
  if (!url) return t.skip('PGlite holds one schema');
  const type = uniqueType('schemas');
  const ran: number[] = [];
  const counted = countingClaims(dbA);
  await startWorker({ database: counted.database, jobs: [{ type, payload: z.object({ n: z.number() }), handle: async ({ n }) => void ran.push(n) }] });
  const other = await openDatabase({ databaseUrl: url, dataDir, poolSize: 1, schemaName: `t_${randomBytes(6).toString('hex')}` });
  try {
    await other.migrate();
    // NOTIFY channels are database-wide: a job queued in the other schema must not wake this worker,
    // whose claim would find nothing there (the interval is a minute away, so only a NOTIFY can wake it).
    await waitFor(() => counted.claims === 1, 2_000, 'the first tick to claim');
    await sleep(300);
    await other.db.transaction((tx) => enqueue(tx, { type, payload: { n: 1 } }));
    await sleep(500);
    assert.equal(counted.claims, 1, 'a NOTIFY from another schema woke the worker');
    await enqueueCommitted(type, { n: 2 });
    await waitFor(() => ran.includes(2), 2_000, 'its own job to run on its NOTIFY');
  } finally {
    await stopAll();
    await other.close();
    await other.dropSchema?.();
  }
});

test('the claim and the completion are prepared once per connection, not planned on every call (proven on PostgreSQL)', async (t) => {
  const url = process.env.DATABASE_URL;
  if (!url) return t.skip('PGlite has no prepared statements to see');
  // One connection, so pg_prepared_statements (per session) shows what the claims and completions left.
  const db = await openDatabase({ databaseUrl: url, dataDir, poolSize: 1, schemaName: currentSchema });
  try {
    const type = uniqueType('prepared');
    for (let n = 0; n < 3; n++) {
      await db.db.transaction((tx) => enqueue(tx, { type, payload: { n } }));
      const [job] = await claim(db.db, { workerId: 'w', types: [type], limit: 1, leaseMs: 30_000 });
      assert.ok(await complete(db.db, job!.id, 'w'));
    }
    const held = rowsOf<{ statement: string }>(await db.db.execute(sql`SELECT statement FROM pg_prepared_statements`));
    const texts = held.map((r) => r.statement.replace(/\s+/g, ' '));
    assert.ok(texts.some((s) => s.includes("UPDATE jobs SET status = 'running'") && s.includes('SKIP LOCKED')), `the claim is prepared; held: ${texts.length}`);
    assert.ok(texts.some((s) => s.includes("UPDATE jobs SET status = 'done'")), 'the completion is prepared');
  } finally {
    await db.close();
  }
});

test("the longest lease, retry delay and period config accepts fit the queue's SQL", async () => {
  const config = loadConfig({ DATA_DIR: dataDir, OPS_TOKEN: 'o'.repeat(16), JWT_SECRET: 'j'.repeat(64), SIGNING_LINK_SECRET: 's'.repeat(64), JOB_LEASE_MS: String(MAX_JOB_LEASE_MS), WEBHOOK_RETRY_SCHEDULE: `1m,${MAX_RETRY_DELAY_MS / 3_600_000}h`, SCHEDULER_INTERVAL_MS: '3600000' });
  const type = uniqueType('bounds');
  await enqueueCommitted(type, {});
  const [job] = await claim(dbA.db, { workerId: 'w', types: [type], limit: 1, leaseMs: config.jobLeaseMs });
  assert.ok(job, 'claimed with the longest lease');
  assert.equal(await dbA.db.transaction((tx) => fail(tx, job, 'w', 'boom', config.webhookRetryScheduleMs.at(-1))), 'retry');
  const [row] = await rowsOfType(type);
  const delayMs = row!.runAt.getTime() - row!.updatedAt.getTime();
  assert.ok(Math.abs(delayMs - MAX_RETRY_DELAY_MS) < 60_000, `retry scheduled ${delayMs} ms later`);
  assert.equal(await dbA.db.transaction((tx) => takePeriod(tx, uniqueType('bounds-period'), config.schedulerIntervalMs)), true);
});
