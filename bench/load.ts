/**
 * Load generation for the bench: autocannon in this process, against servers in their own processes.
 * A row is one measured run (after an unmeasured warm-up) and keeps the monotonic-clock window it ran
 * in, so a CPU profile of the server can be cut to exactly the measured seconds (bench/profile.ts).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { cpuPerRequest, cpuSnapshot, type CpuSnapshot } from './cpu.js';

export type Group = 'bare' | 'read floor' | 'create floor' | 'link floor' | 'verify floor' | 'read' | 'create' | 'link' | 'verify';

export type Row = {
  name: string;
  group: Group;
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  failures: number;
  /** The row this one is compared with as its same-work floor. */
  floor?: Row;
  /** Microseconds of the monotonic clock (what V8's profiler stamps samples with). */
  window: [number, number];
  /** Set when the run was a fixed number of requests rather than a fixed time. */
  seconds?: number;
  /** CPU milliseconds per 2xx response of the server process and of PostgreSQL (bench/cpu.ts). */
  cpu?: CpuSnapshot;
  /** With the worker in process: seconds after the load stopped until the jobs it caused were done (inside the window, the rate and the CPU). */
  drainSeconds?: number;
  /**
   * Measured in turns with its floor (measurePaired): the median, over the rounds, of this row's rate
   * over the floor's in the run just before it; each round's ratio; the rounds themselves (their
   * profile windows).
   */
  paired?: { ratio: number; ratios: number[]; rounds: Row[] };
};

/**
 * A request template. A text body with no per-request parts runs in an autocannon worker thread, as
 * before the servers had their own processes; anything that changes per request (an Idempotency-Key,
 * a path) or a binary body runs from this thread (functions and binary bodies cannot cross to a worker).
 */
export type LoadRequest = {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** A fresh Idempotency-Key on every request. */
  idempotencyKey?: boolean;
  /** The path of the next request, e.g. a different draft each time (called once per request sent). */
  nextPath?: () => string;
};

export type LoadOptions = { connections: number; seconds?: number; amount?: number };

export const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

export function load(req: LoadRequest, opts: LoadOptions): Promise<autocannon.Result> {
  const base = { url: req.url, connections: opts.connections, ...(opts.amount ? { amount: opts.amount } : { duration: opts.seconds }) };
  const dynamic = req.idempotencyKey || req.nextPath || Buffer.isBuffer(req.body);
  if (!dynamic) return autocannon({ ...base, method: req.method ?? 'GET', body: req.body as string | undefined, headers: req.headers, workers: 1 });
  return autocannon({
    ...base,
    requests: [
      {
        method: req.method ?? 'GET',
        body: req.body,
        setupRequest: (r) => {
          const headers = { ...req.headers, ...(req.idempotencyKey ? { 'idempotency-key': randomUUID() } : {}) };
          return req.nextPath ? { ...r, path: req.nextPath(), headers } : { ...r, headers };
        },
      },
    ],
  });
}

function rowOf(name: string, group: Group, r: autocannon.Result, window: [number, number], fixedAmount: boolean, cpu?: CpuSnapshot): Row {
  const seconds = (window[1] - window[0]) / 1e6;
  return {
    name,
    group,
    // A fixed-amount run may end mid-second: its rate is what it did over its own length.
    rps: fixedAmount ? r['2xx'] / seconds : r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    failures: r.non2xx + r.errors + r.timeouts,
    window,
    seconds: fixedAmount ? seconds : undefined,
    cpu,
  };
}

/**
 * `pid`: the server's process, whose CPU time (and PostgreSQL's) is read around the measured run.
 * `drain`: resolves once the jobs the requests caused are done (a server running its worker): awaited
 * before the measured run starts (the warm-up's jobs stay out of it) and after it ends, inside the
 * window, so the rate and the CPU per request include the work the requests left to the worker.
 */
export type MeasureOptions = { connections: number; warmup: number; duration: number; pid?: number; drain?: () => Promise<void> };

/** An unmeasured warm-up of `warmup` seconds, then `duration` seconds measured. */
export async function measure(name: string, group: Group, req: LoadRequest, opts: MeasureOptions): Promise<Row> {
  process.stderr.write(`  ${name}: warming up ${opts.warmup} s, measuring ${opts.duration} s, ${opts.connections} connections\n`);
  const warm = await load(req, { connections: opts.connections, seconds: opts.warmup });
  // The warm-up stops with requests in flight, which the server still finishes: let it, so they do not
  // slow the first measured second.
  await sleep(Math.min(warm.latency.p99, 5_000));
  await opts.drain?.();
  const cpu = cpuSnapshot(opts.pid);
  const start = monotonicMicros();
  const r = await load(req, { connections: opts.connections, seconds: opts.duration });
  const loaded = monotonicMicros();
  await opts.drain?.();
  const window: [number, number] = [start, monotonicMicros()];
  const row = rowOf(name, group, r, window, false, cpuPerRequest(cpu, cpuSnapshot(opts.pid), r['2xx']));
  // The rate over the load and its jobs' drain: what the node sustains with its worker's work done.
  return opts.drain ? { ...row, rps: r['2xx'] / ((window[1] - start) / 1e6), drainSeconds: (window[1] - loaded) / 1e6 } : row;
}

/** A fixed number of requests (each may use up something made beforehand, like a draft). */
export async function measureAmount(name: string, group: Group, req: LoadRequest, warmupAmount: number, amount: number, connections: number, pid?: number, drain?: () => Promise<void>): Promise<Row> {
  process.stderr.write(`  ${name}: warming up with ${warmupAmount} requests, measuring ${amount}, ${connections} connections\n`);
  if (warmupAmount > 0) await load(req, { connections: Math.min(connections, warmupAmount), amount: warmupAmount });
  await drain?.();
  const cpu = cpuSnapshot(pid);
  const start = monotonicMicros();
  const r = await load(req, { connections: Math.min(connections, amount), amount });
  const loaded = monotonicMicros();
  await drain?.();
  const window: [number, number] = [start, monotonicMicros()];
  const row = rowOf(name, group, r, window, true, cpuPerRequest(cpu, cpuSnapshot(pid), r['2xx']));
  return drain ? { ...row, drainSeconds: (window[1] - loaded) / 1e6 } : row;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** A route and the floor it is compared with, each on its own server (`pid` for their CPU). */
export type Measured = { name: string; group: Group; req: LoadRequest; pid?: number };

/**
 * The row and its floor in turns, `rounds` times, each run `duration / rounds` seconds after its own
 * warm-up (the full `warmup` before the first round, at most a second after): a slowdown of the machine
 * that lasts seconds, which this shared 2-core machine has, then hits both sides of a round, where one
 * floor measured minutes earlier would skew the ratio. The row's rate and CPU are over all its rounds,
 * its p50 and p99 the median of theirs; its ratio is the median of the rounds' ratios.
 */
export async function measurePaired(row: Measured, floor: Measured & { row: Row }, opts: MeasureOptions & { rounds: number }): Promise<Row> {
  const rounds: Row[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < opts.rounds; i++) {
    const run = { connections: opts.connections, warmup: i === 0 ? opts.warmup : Math.min(opts.warmup, 1), duration: opts.duration / opts.rounds };
    const base = await measure(`${floor.name}, round ${i + 1}`, floor.group, floor.req, { ...run, pid: floor.pid });
    const r = await measure(`${row.name}, round ${i + 1}`, row.group, row.req, { ...run, pid: row.pid, drain: opts.drain });
    rounds.push(r);
    ratios.push(base.rps > 0 ? r.rps / base.rps : 0);
  }
  const requests = rounds.reduce((n, r) => n + r.requests, 0);
  const ok = rounds.reduce((n, r) => n + r.requests - r.failures, 0);
  const cpuOf = (key: keyof CpuSnapshot) => rounds.reduce((sum, r) => sum + (r.cpu?.[key] ?? 0) * (r.requests - r.failures), 0) / Math.max(ok, 1);
  return {
    name: row.name,
    group: row.group,
    rps: rounds.reduce((sum, r) => sum + r.rps, 0) / rounds.length,
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    requests,
    failures: rounds.reduce((n, r) => n + r.failures, 0),
    floor: floor.row,
    window: [rounds[0].window[0], rounds.at(-1)!.window[1]],
    cpu: rounds.every((r) => r.cpu) ? { serverMs: cpuOf('serverMs'), dbMs: cpuOf('dbMs') } : undefined,
    drainSeconds: opts.drain ? rounds.reduce((sum, r) => sum + (r.drainSeconds ?? 0), 0) : undefined,
    paired: { ratio: median(ratios), ratios, rounds },
  };
}
