import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { sql } from 'drizzle-orm';
import type { ZodType } from 'zod';
import type { Database, DbOrTx, Tx } from '../db/client.js';
import { rowsOf } from '../db/client.js';
import { JOBS_CHANNEL, bury, buryLapsed, claim, completeMany, fail, purgeDone, takePeriod, type JobRow } from './queue.js';
import { requestIdOf, runWithRequestId } from './request-scope.js';
import { RetryLater } from './retry-later.js';
import { within } from '../lib/deadline.js';

export type JobContext = { jobId: number; attempt: number; maxAttempts: number; workerId: string };

/**
 * A job type, defined by the module that owns it (`<module>.jobs.ts`). The payload is checked against
 * its schema before the handler runs: a payload that does not fit can never succeed, so the job ends
 * dead at once with an operator alert instead of retrying. A handler must be safe to run twice: a
 * worker may die after the effect and before the job is marked done; a run that crashed its process counts as an
 * attempt, and a job whose attempts are spent that way ends dead with an operator alert too.
 */
export type JobDefinition<P = unknown> = {
  type: string;
  payload: ZodType<P>;
  /** Resolves 'completed' when it already marked the job done in its own transaction (one round trip saved). */
  handle(payload: P, ctx: JobContext): Promise<void | 'completed'>;
  /**
   * The handler raises its own operator alert when its last attempt fails (refunds: refund_failed), so
   * the worker raises none for that failure; an invalid payload, a crash or a deadline still gets the worker's.
   */
  raisesOwnFailureAlert?: boolean;
  /**
   * How long one run may take (DEFAULT_JOB_TIMEOUT_MS unless set). Past it the run counts as a failed
   * attempt, the lease is no longer renewed and the worker's slot is free for the next job. The
   * handler itself cannot be stopped: a late effect is one more reason it must be safe to run twice.
   */
  timeoutMs?: number;
};

/** A job's deadline unless its type sets another: far above any healthy run, so only a hang reaches it. */
export const DEFAULT_JOB_TIMEOUT_MS = 10 * 60_000;

/** Infers the payload type from the schema, so handlers get it typed without casts. */
export const defineJob = <P>(def: JobDefinition<P>): JobDefinition<P> => def;

/** Why a job ended dead: a payload no retry can fix, its last attempt failed, ran past its deadline, or crashed its worker. */
export type DeadJobCause = 'invalid_payload' | 'failed' | 'timed_out' | 'crashed';

/** A run that passed its job type's deadline (the handler may still be running; its outcome is ignored). */
class JobTimedOut extends Error {}

/** Raised in the transaction that ends a job dead, whatever the cause: a dead job needs an operator. */
export type DeadJobAlert = (tx: DbOrTx, job: { id: number; type: string }, reason: string, cause: DeadJobCause) => Promise<void>;

/**
 * Runs once per scheduler interval across every worker sharing the database (a schedule row in jobs,
 * taken in the task's transaction), on one node at a time (a transaction-scoped advisory lock).
 */
export type PeriodicTask = {
  name: string;
  run(tx: Tx): Promise<void>;
};

type Logger = { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void; error(obj: object, msg?: string): void; child?(bindings: object): Logger };

export type WorkerOptions = {
  database: Database;
  // Each definition checks its own payload type; the list mixes them.
  jobs: JobDefinition<any>[];
  periodic?: PeriodicTask[];
  onDeadJob?: DeadJobAlert;
  concurrency: number;
  leaseMs: number;
  intervalMs: number;
  logger: Logger;
};

const DONE_JOB_RETENTION_MS = 7 * 24 * 3_600_000;

/** The queue's own housekeeping: finished jobs go after a week; dead ones stay for operators. */
const purgeDoneJobs: PeriodicTask = {
  name: 'purge-done-jobs',
  run: async (tx) => void (await purgeDone(tx, new Date(Date.now() - DONE_JOB_RETENTION_MS))),
};

/** Stable advisory-lock key per periodic task name (32-bit FNV-1a). */
function lockKey(name: string): number {
  let h = 0x811c9dc5;
  for (const ch of name) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return h | 0;
}

export function createWorker(opts: WorkerOptions) {
  const { onDeadJob } = opts;
  const workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const byType = new Map(opts.jobs.map((j) => [j.type, j]));
  const types = [...byType.keys()];
  const running = new Set<Promise<void>>();
  /**
   * Jobs whose handler succeeded, still `running` in the table: the next claim marks them done (or a
   * statement of their own when no claim follows). Until then they hold their lease like a running job:
   * a crash before that statement runs them again, as a crash before `complete` always did.
   */
  const finished: number[] = [];
  let stopped = true;
  let pumping: Promise<void> | undefined;
  let ticking: Promise<void> | undefined;
  let wakeAgain = false;
  let timer: NodeJS.Timeout | undefined;
  let unlisten: (() => Promise<void>) | undefined;

  /** Each job runs in the scope of the request that enqueued it: its log lines name it (`reqId`, as Fastify's do), and so do the jobs it enqueues. */
  function runJob(job: JobRow): Promise<void> {
    const requestId = requestIdOf(job.payload);
    const log = requestId === undefined ? opts.logger : (opts.logger.child?.({ reqId: requestId }) ?? opts.logger);
    return runWithRequestId(requestId, () => runJobIn(job, log));
  }

  async function runJobIn(job: JobRow, log: Logger): Promise<void> {
    const def = byType.get(job.type)!;
    // Renew the lease while the handler runs, so a long job is not taken over by another worker.
    const heartbeat = setInterval(() => {
      opts.database.db
        .execute(sql`UPDATE jobs SET locked_until = now() + (${opts.leaseMs}::int * interval '1 millisecond')
          WHERE id = ${job.id} AND locked_by = ${workerId} AND status = 'running'`)
        .catch(() => {});
    }, Math.max(250, Math.floor(opts.leaseMs / 3)));
    try {
      const parsed = def.payload.safeParse(job.payload);
      if (!parsed.success) {
        const reason = `invalid payload: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`.slice(0, 1000);
        await opts.database.db.transaction(async (tx) => {
          if (await bury(tx, job.id, workerId, reason)) await onDeadJob?.(tx, job, reason, 'invalid_payload');
        });
        log.error({ jobId: job.id, type: job.type, err: reason }, 'job dead: invalid payload');
        return;
      }
      const timeoutMs = def.timeoutMs ?? DEFAULT_JOB_TIMEOUT_MS;
      const run = def.handle(parsed.data, { jobId: job.id, attempt: job.attempts, maxAttempts: job.maxAttempts, workerId });
      const outcome = await within(run, timeoutMs, () => new JobTimedOut(`deadline passed: the job ran longer than ${timeoutMs} ms`));
      if (outcome !== 'completed') finished.push(job.id);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const retryInMs = err instanceof RetryLater ? err.retryInMs : undefined;
      const timedOut = err instanceof JobTimedOut;
      // A hung handler would renew the lease for ever: stop before the failure is recorded.
      clearInterval(heartbeat);
      // The burial and its alert commit together: a dead job is never left without one.
      const outcome = await opts.database.db
        .transaction(async (tx) => {
          const result = await fail(tx, job, workerId, message, retryInMs);
          if (result === 'dead' && (timedOut || !def.raisesOwnFailureAlert)) await onDeadJob?.(tx, job, message.slice(0, 1000), timedOut ? 'timed_out' : 'failed');
          return result;
        })
        .catch(() => 'unknown');
      const write = outcome === 'dead' ? log.error.bind(log) : log.warn.bind(log);
      write({ jobId: job.id, type: job.type, attempt: job.attempts, outcome, err: message }, timedOut ? 'job ran past its deadline' : 'job failed');
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * Wake-ups (a NOTIFY, a tick, `wake`) since the last claim that came back short. A short claim proves
   * no more jobs were due when it ran, so a finished job claims again only if something may have come
   * since (a wake-up, or a full claim that may have left more): an idle queue costs no claim per job.
   */
  let wakes = 0;
  let mayBeDue = true;

  function wakeUp(): Promise<void> {
    wakes++;
    mayBeDue = true;
    return pump();
  }

  /** Claims as many due jobs as there are free slots, starts them, and repeats while work keeps coming. */
  function pump(): Promise<void> {
    if (pumping) {
      wakeAgain = true;
      return pumping;
    }
    pumping = pumpLoop().finally(() => {
      pumping = undefined;
      // A job that finished as the loop was ending: its completion does not wait for the next wake-up.
      if (finished.length) void pump();
    });
    return pumping;
  }

  async function pumpLoop(): Promise<void> {
    try {
      do {
        wakeAgain = false;
        for (;;) {
          const claiming = !stopped && mayBeDue && running.size < opts.concurrency;
          if (!claiming) {
            // Completions are written even when stopping: stop() resolves with its jobs done.
            if (finished.length === 0) break;
            await completeMany(opts.database.db, finished.splice(0), workerId);
            continue;
          }
          const seen = wakes;
          const limit = opts.concurrency - running.size;
          const claimed = await claim(opts.database.db, { workerId, types, limit, leaseMs: opts.leaseMs, done: finished.splice(0) });
          if (claimed.length < limit && wakes === seen) mayBeDue = false;
          for (const job of claimed) {
            const p: Promise<void> = runJob(job).finally(() => {
              running.delete(p);
              if ((!stopped && mayBeDue) || finished.length) void pump();
            });
            running.add(p);
          }
        }
      } while ((wakeAgain && !stopped) || finished.length);
    } catch (err) {
      if (!stopped) opts.logger.warn({ err: (err as Error).message }, 'job claim failed');
    }
  }

  /** Jobs whose worker died holding their last attempt: dead, with the alert, instead of run again. */
  const buryCrashedJobs: PeriodicTask = {
    name: 'bury-crashed-jobs',
    run: async (tx) => {
      for (const job of await buryLapsed(tx)) {
        const reason = `its worker died holding it on each of its ${job.attempts} attempt(s)`;
        await onDeadJob?.(tx, job, reason, 'crashed');
        opts.logger.error({ jobId: job.id, type: job.type, attempt: job.attempts }, 'job dead: lease lapsed on its last attempt');
      }
    },
  };

  async function runPeriodic(): Promise<void> {
    // The queue's own housekeeping runs on every tick (an indexed statement each, and a crashed job is
    // buried promptly); the modules' tasks once per interval across the cluster, however many workers.
    const housekeeping = [purgeDoneJobs, buryCrashedJobs];
    for (const task of [...housekeeping, ...(opts.periodic ?? [])]) {
      if (stopped) return;
      try {
        await opts.database.db.transaction(async (tx) => {
          const [row] = rowsOf<{ locked: boolean }>(await tx.execute(sql`SELECT pg_try_advisory_xact_lock(${lockKey(task.name)}) AS locked`));
          if (!row?.locked) return;
          if (housekeeping.includes(task) || (await takePeriod(tx, task.name, opts.intervalMs))) await task.run(tx);
        });
      } catch (err) {
        opts.logger.warn({ task: task.name, err: (err as Error).message }, 'periodic task failed');
      }
    }
  }

  function tick(): void {
    ticking = (async () => {
      await runPeriodic();
      await wakeUp();
    })().finally(() => {
      ticking = undefined;
      if (!stopped) timer = setTimeout(tick, opts.intervalMs);
    });
  }

  return {
    workerId,
    async start(): Promise<void> {
      if (!stopped) return;
      stopped = false;
      const [{ schema }] = rowsOf<{ schema: string }>(await opts.database.db.execute(sql`SELECT current_schema() AS schema`));
      unlisten = await opts.database.listen(JOBS_CHANNEL, (payload) => {
        if (payload === schema) void wakeUp();
      });
      tick();
    },
    /** Pumps now: for callers that know work was just committed (tests, in-process wake-ups). */
    wake(): void {
      if (!stopped) void wakeUp();
    },
    /** Stops claiming, then waits for the periodic task, the claim and the jobs in hand to finish. */
    async stop(): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      await Promise.allSettled([ticking, pumping]);
      await Promise.allSettled([...running]);
      // The jobs that just ended are marked done before stop() resolves.
      while (pumping || finished.length) await (pumping ?? pump());
      await unlisten?.();
      unlisten = undefined;
    },
  };
}

export type Worker = ReturnType<typeof createWorker>;
