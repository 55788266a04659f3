import { sql } from 'drizzle-orm';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { rowsOf, type Database } from '../../db/client.js';
import { within } from '../../lib/deadline.js';
import { sandboxStats } from '../../pdf/sandbox.js';

/**
 * What services count, one line where each thing happens. Injected by the container (one registry per
 * container, so apps built side by side in one process never share counts). A count made inside a
 * transaction is made when the statement succeeds: a transaction that then rolls back (rare) is counted.
 */
export type Metrics = {
  webhookDelivery(outcome: 'delivered' | 'retrying' | 'dead'): void;
  charge(via: 'balance' | 'sandbox' | 'x402', operation: string): void;
  refund(kind: 'balance' | 'wallet', outcome: 'requested' | 'succeeded' | 'failed' | 'completed'): void;
  x402Settlement(outcome: 'settled' | 'refused' | 'unknown'): void;
};

/** A scrape never waits on a slow database longer than this: the job gauges are then left out. */
const SCRAPE_QUERY_TIMEOUT_MS = 2_000;
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

type JobStatsRow = { type: string; due: number | string; scheduled: number | string; running: number | string; dead: number | string; oldest: number | string | null };

export function createMetrics(deps: { database: Database }) {
  const registry = new Registry();
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) => new Counter<L>({ name, help, labelNames, registers });
  const gauge = <L extends string>(name: string, help: string, labelNames: L[] = []) => new Gauge<L>({ name, help, labelNames, registers });

  const requests = counter('signet_http_requests_total', 'HTTP requests answered, by method, route pattern and status code', ['method', 'route', 'status_code']);
  const latency = new Histogram({ name: 'signet_http_request_duration_seconds', help: 'Time to answer an HTTP request, by method and route pattern', labelNames: ['method', 'route'], buckets: LATENCY_BUCKETS, registers });
  const deliveries = counter('signet_webhook_deliveries_total', 'Webhook delivery attempts by outcome: delivered, retrying (failed, will retry), dead (failed for good)', ['outcome']);
  const charges = counter('signet_charges_total', 'Billable calls charged, by operation and how they were paid (balance, sandbox, x402)', ['operation', 'via']);
  const refunds = counter('signet_refunds_total', 'Refunds by kind (balance, wallet) and event (requested, succeeded, failed, completed)', ['kind', 'outcome']);
  const settlements = counter('signet_x402_settlements_total', 'x402 payment settlements by outcome (settled, refused, unknown: no clear answer)', ['outcome']);
  const redisShared = gauge('signet_redis_shared', '1 while this node counts rate limits and failed authentications in Redis; 0 while it counts alone (no REDIS_URL, Redis unreachable, or connected but not answering)');
  const redisUnanswered = counter('signet_redis_unanswered_total', 'Redis commands that failed or timed out (each counted in the process instead)', []);

  const jobGauges = {
    due: gauge('signet_job_queue_depth', 'Queued jobs due now (waiting for a worker), by type', ['type']),
    oldest: gauge('signet_job_queue_oldest_age_seconds', 'How long the oldest due job has waited since its run time, by type (0 when none)', ['type']),
    scheduled: gauge('signet_jobs_scheduled', 'Queued jobs due later (retries and scheduled work), by type', ['type']),
    running: gauge('signet_jobs_running', 'Jobs held by a worker, by type', ['type']),
    dead: gauge('signet_jobs_dead', 'Dead jobs (attempts spent; kept for operators), by type', ['type']),
  };
  const jobStatsOk = gauge('signet_job_stats_ok', '1 when this scrape read the job queue, 0 when the database did not answer in time (the job gauges are then absent)');
  const pool = {
    max: gauge('signet_db_pool_max', 'Database connections this process may open (PGlite: 1, in-process)'),
    total: gauge('signet_db_pool_connections', 'Database connections open (PGlite: 1)'),
    idle: gauge('signet_db_pool_idle', 'Database connections open and idle (PostgreSQL only)'),
    waiting: gauge('signet_db_pool_waiting', 'Queries waiting for a database connection (PostgreSQL only)'),
  };
  const sandbox = {
    workers: gauge('signet_pdf_sandbox_workers', 'PDF worker threads alive, by pool (prepare, render, seal)', ['pool']),
    busy: gauge('signet_pdf_sandbox_busy', 'PDF worker threads running a job, by pool', ['pool']),
    queued: gauge('signet_pdf_sandbox_queued', 'PDF jobs waiting for a worker thread, by pool', ['pool']),
  };

  // Label sets seen before: a type whose jobs are all gone reads 0, rather than its last value.
  const jobTypes = new Set<string>();
  const sandboxPools = new Set<string>();
  let defaultsOn = false;
  let isRedisShared = () => false;

  /** One grouped read of the live part of the queue (done jobs are not looked at: the claim index covers the rest). */
  async function readJobs(): Promise<void> {
    // A real promise: drizzle's query runs again on each `then` (lib/deadline.ts).
    const query = Promise.resolve(deps.database.db.execute(sql`
      SELECT type,
        count(*) FILTER (WHERE status = 'queued' AND run_at <= now()) AS due,
        count(*) FILTER (WHERE status = 'queued' AND run_at > now()) AS scheduled,
        count(*) FILTER (WHERE status = 'running') AS running,
        count(*) FILTER (WHERE status = 'dead') AS dead,
        EXTRACT(EPOCH FROM now() - min(run_at) FILTER (WHERE status = 'queued' AND run_at <= now())) AS oldest
      FROM jobs WHERE status IN ('queued', 'running', 'dead') GROUP BY type`));
    try {
      const rows = rowsOf<JobStatsRow>(await within(query, SCRAPE_QUERY_TIMEOUT_MS, () => new Error('job stats timed out')));
      for (const type of jobTypes) for (const g of Object.values(jobGauges)) g.set({ type }, 0);
      for (const r of rows) {
        jobTypes.add(r.type);
        jobGauges.due.set({ type: r.type }, Number(r.due));
        jobGauges.scheduled.set({ type: r.type }, Number(r.scheduled));
        jobGauges.running.set({ type: r.type }, Number(r.running));
        jobGauges.dead.set({ type: r.type }, Number(r.dead));
        jobGauges.oldest.set({ type: r.type }, Math.max(0, Number(r.oldest ?? 0)));
      }
      jobStatsOk.set(1);
    } catch {
      for (const g of Object.values(jobGauges)) g.reset();
      jobStatsOk.set(0);
    }
  }

  function readPools(): void {
    const p = deps.database.poolStats?.();
    if (p) {
      pool.max.set(p.max);
      pool.total.set(p.total);
      if (p.idle !== undefined) pool.idle.set(p.idle);
      if (p.waiting !== undefined) pool.waiting.set(p.waiting);
    }
    for (const name of sandboxPools) for (const g of Object.values(sandbox)) g.set({ pool: name }, 0);
    for (const s of sandboxStats()) {
      sandboxPools.add(s.pool);
      sandbox.workers.set({ pool: s.pool }, s.workers);
      sandbox.busy.set({ pool: s.pool }, s.busy);
      sandbox.queued.set({ pool: s.pool }, s.queued);
    }
  }

  const counts: Metrics = {
    webhookDelivery: (outcome) => deliveries.inc({ outcome }),
    charge: (via, operation) => charges.inc({ via, operation }),
    refund: (kind, outcome) => refunds.inc({ kind, outcome }),
    x402Settlement: (outcome) => settlements.inc({ outcome }),
  };

  return {
    ...counts,
    contentType: registry.contentType,
    /** One answered request: `route` is the route's pattern (never the raw URL, which is unbounded). */
    observeRequest(method: string, route: string, statusCode: number, seconds: number): void {
      requests.inc({ method, route, status_code: String(statusCode) });
      latency.observe({ method, route }, seconds);
    },
    /** REDIS_URL's gate (providers/redis/redis.ts): its state is read at scrape time. */
    watchRedis(isShared: () => boolean): void {
      isRedisShared = isShared;
    },
    redisUnanswered: () => redisUnanswered.inc(),
    /** The exposition text: the gauges read now (one query, in-memory counts), then every metric. */
    async render(): Promise<string> {
      // Process metrics from the first scrape on: apps that are never scraped (tests) start no collectors.
      if (!defaultsOn) collectDefaultMetrics({ register: registry });
      defaultsOn = true;
      readPools();
      redisShared.set(isRedisShared() ? 1 : 0);
      await readJobs();
      return registry.metrics();
    },
  };
}

export type MetricsRegistry = ReturnType<typeof createMetrics>;
