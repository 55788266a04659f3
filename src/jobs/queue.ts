import { and, eq, inArray, lt, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/client.js';
import { rowsOf } from '../db/client.js';
import { executePrepared, preparedSql } from '../db/prepared.js';
import { jobs } from '../db/schema/index.js';
import { withRequestId } from './request-scope.js';

/**
 * The queue's NOTIFY channel. Channels are database-wide, so each notification carries the schema its jobs
 * were queued in and a worker wakes only for its own: deployments (or test runs) that share one database
 * under different schemas do not wake each other's workers for claims that find nothing.
 */
export const JOBS_CHANNEL = 'signet_jobs';

export type JobRow = typeof jobs.$inferSelect;

export type EnqueueInput = {
  type: string;
  payload: unknown;
  /** When to run; now by default. */
  runAt?: Date;
  maxAttempts?: number;
  /** A second enqueue with the same key is a no-op while the first row exists. */
  dedupeKey?: string;
};

/**
 * Enqueues inside the caller's transaction, so the job exists exactly when the state change that
 * needs it committed. The NOTIFY is delivered on commit and wakes idle workers at once. Several jobs
 * go in one statement. Enqueued while serving a request (or running a job that did), an object
 * payload carries that request's id under `requestId`, so the worker's log lines name it.
 */
export async function enqueue(tx: DbOrTx, jobs: EnqueueInput | EnqueueInput[]): Promise<void> {
  const list = Array.isArray(jobs) ? jobs : [jobs];
  if (list.length === 0) return;
  await executePrepared(tx, enqueueStatement(list));
}

/**
 * The INSERT that enqueues `jobs`, for a caller that runs it inside a larger statement (a CTE of its
 * own insert) to save a round trip; `enqueue` runs it alone. Its NOTIFY is part of it: pg_notify is
 * a function of its FROM list, evaluated once, so the insert wakes the workers however it is run.
 * The jobs travel as one JSON parameter, so the text is the same for any number of them.
 */
export function enqueueStatement(jobs: EnqueueInput[]): SQL {
  const rows = jobs.map((job, n) => ({
    n,
    type: job.type,
    payload: withRequestId(job.payload ?? {}),
    run_at: job.runAt?.toISOString() ?? null,
    max_attempts: job.maxAttempts ?? 10,
    dedupe_key: job.dedupeKey ?? null,
  }));
  return sql`
    INSERT INTO jobs (type, payload, run_at, max_attempts, dedupe_key)
    SELECT x.type, x.payload, coalesce(x.run_at, now()), x.max_attempts, x.dedupe_key
    FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
      AS x(n int, type text, payload jsonb, run_at timestamptz, max_attempts int, dedupe_key text),
      pg_notify(${JOBS_CHANNEL}, current_schema())
    ORDER BY x.n
    ON CONFLICT (dedupe_key) DO NOTHING`;
}

/**
 * Claims up to `limit` due jobs for `workerId`: queued jobs whose time has come, and running jobs
 * whose lease lapsed (their worker died) with attempts left. SKIP LOCKED lets workers claim side by
 * side without waiting on or taking each other's rows. The claim counts the attempt, so a run that
 * crashes its process has spent one: a lapsed job whose attempts are spent is never handed out again
 * (a poison job would crash-loop every node); `buryLapsed` ends it dead.
 */
export async function claim(db: Db, opts: { workerId: string; types: string[]; limit: number; leaseMs: number; done?: number[] }): Promise<JobRow[]> {
  if (opts.types.length === 0) return [];
  const done = opts.done?.length ? doneList(opts.done) : undefined;
  // Built once per worker's list of types (with and without completions): a worker claims after every wake-up.
  const values = { workerId: opts.workerId, leaseMs: opts.leaseMs, limit: opts.limit, ...(done ? { done } : {}) };
  const result = await (done ? claimCompletingStatement : claimStatement)(db, opts.types.join('\n'), values);
  // A raw query returns the bigint id as a string on node-postgres: the row type promises a number.
  return rowsOf<JobRow>(result).map((r) => ({ ...r, id: Number(r.id) }));
}

/**
 * The claim for the job types in `key` (one per line). The jobs this worker just finished are marked
 * done by the claim itself when `completing` (a CTE, one round trip and one commit instead of two),
 * only while it still holds them, as `complete` does; never claimed back. Prepared: planning this
 * statement cost more than running it.
 */
const claimFor = (completing: boolean) => (key: string): SQL => {
  const types = sql.join(key.split('\n').map((t) => sql`${t}`), sql`, `);
  const done = sql.placeholder('done');
  const workerId = sql.placeholder('workerId');
  return sql`
    ${completing ? sql`WITH done AS (${completeStatement(done, workerId)}) ` : sql``}UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_by = ${workerId},
      locked_until = now() + (${sql.placeholder('leaseMs')}::int * interval '1 millisecond'), updated_at = now()
    WHERE id IN (
      SELECT id FROM jobs
      WHERE type IN (${types})
        AND ((status = 'queued' AND run_at <= now()) OR (status = 'running' AND locked_until < now() AND attempts < max_attempts))${completing ? sql` AND NOT (id = ANY (${done}::bigint[]))` : sql``}
      ORDER BY run_at, id
      LIMIT ${sql.placeholder('limit')}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, type, payload, attempts, max_attempts AS "maxAttempts", run_at AS "runAt"`;
};
const claimStatement = preparedSql(claimFor(false));
const claimCompletingStatement = preparedSql(claimFor(true));

/** Job ids as one array parameter (a PostgreSQL array literal), so the text is the same for any number of them. */
const doneList = (ids: number[]): string => `{${ids.map((id) => Math.trunc(id)).join(',')}}`;

const completeStatement = (ids: Placeholder, workerId: Placeholder): SQL => sql`
    UPDATE jobs SET status = 'done', locked_by = NULL, locked_until = NULL, last_error = NULL, updated_at = now()
    WHERE id = ANY (${ids}::bigint[]) AND locked_by = ${workerId} AND status = 'running'
    RETURNING id`;
const completeManyStatement = preparedSql(() => completeStatement(sql.placeholder('ids'), sql.placeholder('workerId')));

/** Marks finished jobs done in one statement, each only while this worker still holds it (as `complete`). */
export async function completeMany(db: DbOrTx, jobIds: number[], workerId: string): Promise<number> {
  if (jobIds.length === 0) return 0;
  return rowsOf(await completeManyStatement(db, '', { ids: doneList(jobIds), workerId })).length;
}

const completeOneStatement = preparedSql(
  () => sql`
    UPDATE jobs SET status = 'done', locked_by = NULL, locked_until = NULL, last_error = NULL, updated_at = now()
    WHERE id = ${sql.placeholder('id')} AND locked_by = ${sql.placeholder('workerId')} AND status = 'running'
    RETURNING id`,
);

/** Marks the job done, only while this worker still holds it (a lapsed lease may have moved it on). */
export async function complete(db: DbOrTx, jobId: number, workerId: string): Promise<boolean> {
  return rowsOf(await completeOneStatement(db, '', { id: jobId, workerId })).length === 1;
}

/**
 * Ends dead the running jobs whose lease lapsed on their last attempt: their worker died holding them
 * as many times as they may run. Returns them, so the caller raises the alert in the same transaction.
 */
export async function buryLapsed(tx: DbOrTx, limit = 100): Promise<Pick<JobRow, 'id' | 'type' | 'attempts' | 'maxAttempts'>[]> {
  const result = await tx.execute(sql`
    UPDATE jobs SET status = 'dead', locked_by = NULL, locked_until = NULL, updated_at = now(),
      last_error = 'lease lapsed on attempt ' || attempts || ' of ' || max_attempts || ': the worker died holding the job'
    WHERE id IN (
      SELECT id FROM jobs
      WHERE status = 'running' AND locked_until < now() AND attempts >= max_attempts
      ORDER BY locked_until, id
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, type, attempts, max_attempts AS "maxAttempts"`);
  return rowsOf<Pick<JobRow, 'id' | 'type' | 'attempts' | 'maxAttempts'>>(result).map((r) => ({ ...r, id: Number(r.id) }));
}

/**
 * Operator: queues a dead job again, due now, with its attempts reset (its last error stays until the
 * next attempt). Undefined when there is no such job; the row as it is when it is not dead.
 */
export async function requeueDead(tx: DbOrTx, jobId: number): Promise<{ job: Pick<JobRow, 'id' | 'type' | 'status'>; requeued: boolean } | undefined> {
  const [requeued] = await tx
    .update(jobs)
    .set({ status: 'queued', attempts: 0, runAt: sql`now()`, lockedBy: null, lockedUntil: null, updatedAt: sql`now()` })
    .where(and(eq(jobs.id, jobId), eq(jobs.status, 'dead')))
    .returning({ id: jobs.id, type: jobs.type, status: jobs.status });
  if (requeued) {
    await tx.execute(sql`SELECT pg_notify(${JOBS_CHANNEL}, current_schema())`);
    return { job: requeued, requeued: true };
  }
  const [current] = await tx.select({ id: jobs.id, type: jobs.type, status: jobs.status }).from(jobs).where(eq(jobs.id, jobId));
  return current ? { job: current, requeued: false } : undefined;
}

/** Exponential backoff with jitter: 2^attempts seconds, capped at an hour. */
export function backoffMs(attempts: number): number {
  const base = Math.min(3_600_000, 1000 * 2 ** Math.min(attempts, 12));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/**
 * Schedules the next attempt, or marks the job dead once its attempts are spent; 'lost' when this
 * worker no longer holds the job (its lease lapsed and another took it or buried it).
 */
export async function fail(db: DbOrTx, job: Pick<JobRow, 'id' | 'attempts' | 'maxAttempts'>, workerId: string, error: string, retryInMs?: number): Promise<'retry' | 'dead' | 'lost'> {
  const dead = job.attempts >= job.maxAttempts;
  const delay = retryInMs ?? backoffMs(job.attempts);
  const rows = await db
    .update(jobs)
    .set({
      status: dead ? 'dead' : 'queued',
      runAt: dead ? undefined : sql`now() + (${delay}::int * interval '1 millisecond')`,
      lockedBy: null,
      lockedUntil: null,
      lastError: error.slice(0, 2000),
      updatedAt: sql`now()`,
    })
    .where(and(eq(jobs.id, job.id), eq(jobs.lockedBy, workerId)))
    .returning({ id: jobs.id });
  if (rows.length === 0) return 'lost';
  return dead ? 'dead' : 'retry';
}

/** Ends a job dead at once, whatever attempts it has left (a payload no retry can fix). */
export async function bury(db: DbOrTx, jobId: number, workerId: string, error: string): Promise<boolean> {
  const rows = await db
    .update(jobs)
    .set({ status: 'dead', lockedBy: null, lockedUntil: null, lastError: error.slice(0, 2000), updatedAt: sql`now()` })
    .where(and(eq(jobs.id, jobId), eq(jobs.lockedBy, workerId), eq(jobs.status, 'running')))
    .returning({ id: jobs.id });
  return rows.length === 1;
}

/** Deletes finished jobs older than the cutoff; dead jobs stay for operators. */
export async function purgeDone(db: DbOrTx, olderThan: Date): Promise<number> {
  const rows = await db
    .delete(jobs)
    .where(and(inArray(jobs.status, ['done']), lt(jobs.updatedAt, olderThan)))
    .returning({ id: jobs.id });
  return rows.length;
}

/** The row of a periodic task's schedule: `done`, so no worker claims it; its run_at is when the task is next due. */
export const PERIODIC_JOB_TYPE = 'periodic';

/**
 * Takes this period's run of a periodic task, for the whole cluster: true when the task is due (its
 * schedule row's run_at has passed, or it has none yet), and then moves the row to one period from
 * now. Inside the task's own transaction, so a run that fails rolls the schedule back and the next
 * tick of any worker tries again. The times are the database's, so nodes' clocks do not matter.
 */
export async function takePeriod(tx: DbOrTx, task: string, periodMs: number): Promise<boolean> {
  const result = await tx.execute(sql`
    INSERT INTO jobs (type, payload, status, run_at, dedupe_key)
    VALUES (${PERIODIC_JOB_TYPE}, '{}'::jsonb, 'done', now() + (${periodMs}::int * interval '1 millisecond'), ${`periodic:${task}`})
    ON CONFLICT (dedupe_key) DO UPDATE SET run_at = EXCLUDED.run_at, updated_at = now()
      WHERE jobs.run_at <= now()
    RETURNING id`);
  return rowsOf(result).length === 1;
}
