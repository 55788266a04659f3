import { and, eq, inArray, lt, sql } from 'drizzle-orm';
import type { Db, DbOrTx } from '../db/client.js';
import { rowsOf } from '../db/client.js';
import { jobs } from '../db/schema/index.js';

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
 * needs it committed. The NOTIFY is delivered on commit and wakes idle workers at once.
 */
export async function enqueue(tx: DbOrTx, job: EnqueueInput): Promise<void> {
  await tx
    .insert(jobs)
    .values({
      type: job.type,
      payload: job.payload ?? {},
      runAt: job.runAt ?? sql`now()`,
      maxAttempts: job.maxAttempts ?? 10,
      dedupeKey: job.dedupeKey ?? null,
    })
    .onConflictDoNothing({ target: jobs.dedupeKey });
  await tx.execute(sql`SELECT pg_notify(${JOBS_CHANNEL}, '')`);
}

/**
 * Claims up to `limit` due jobs for `workerId`: queued jobs whose time has come, and running jobs
 * whose lease lapsed (their worker died). SKIP LOCKED lets workers claim side by side without waiting
 * on or taking each other's rows.
 */
export async function claim(db: Db, opts: { workerId: string; types: string[]; limit: number; leaseMs: number }): Promise<JobRow[]> {
  if (opts.types.length === 0) return [];
  const types = sql.join(opts.types.map((t) => sql`${t}`), sql`, `);
  const result = await db.execute(sql`
    UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_by = ${opts.workerId},
      locked_until = now() + (${opts.leaseMs}::int * interval '1 millisecond'), updated_at = now()
    WHERE id IN (
      SELECT id FROM jobs
      WHERE type IN (${types})
        AND ((status = 'queued' AND run_at <= now()) OR (status = 'running' AND locked_until < now()))
      ORDER BY run_at, id
      LIMIT ${opts.limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, type, payload, attempts, max_attempts AS "maxAttempts", run_at AS "runAt"`);
  return rowsOf<JobRow>(result);
}

/** Marks the job done, only while this worker still holds it (a lapsed lease may have moved it on). */
export async function complete(db: DbOrTx, jobId: number, workerId: string): Promise<boolean> {
  const rows = await db
    .update(jobs)
    .set({ status: 'done', lockedBy: null, lockedUntil: null, lastError: null, updatedAt: sql`now()` })
    .where(and(eq(jobs.id, jobId), eq(jobs.lockedBy, workerId), eq(jobs.status, 'running')))
    .returning({ id: jobs.id });
  return rows.length === 1;
}

/** Exponential backoff with jitter: 2^attempts seconds, capped at an hour. */
export function backoffMs(attempts: number): number {
  const base = Math.min(3_600_000, 1000 * 2 ** Math.min(attempts, 12));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** Schedules the next attempt, or marks the job dead once its attempts are spent. */
export async function fail(db: DbOrTx, job: Pick<JobRow, 'id' | 'attempts' | 'maxAttempts'>, workerId: string, error: string, retryInMs?: number): Promise<'retry' | 'dead'> {
  const dead = job.attempts >= job.maxAttempts;
  const delay = retryInMs ?? backoffMs(job.attempts);
  await db
    .update(jobs)
    .set({
      status: dead ? 'dead' : 'queued',
      runAt: dead ? undefined : sql`now() + (${delay}::int * interval '1 millisecond')`,
      lockedBy: null,
      lockedUntil: null,
      lastError: error.slice(0, 2000),
      updatedAt: sql`now()`,
    })
    .where(and(eq(jobs.id, job.id), eq(jobs.lockedBy, workerId)));
  return dead ? 'dead' : 'retry';
}

/** Deletes finished jobs older than the cutoff; dead jobs stay for operators. */
export async function purgeDone(db: DbOrTx, olderThan: Date): Promise<number> {
  const rows = await db
    .delete(jobs)
    .where(and(inArray(jobs.status, ['done']), lt(jobs.updatedAt, olderThan)))
    .returning({ id: jobs.id });
  return rows.length;
}
