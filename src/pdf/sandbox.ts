import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { AppError, type ErrorCode } from '../errors.js';

/**
 * Messages of the sandbox protocol. The worker posts `ready` once loaded, then one reply per job;
 * during a job it may ask the parent something (`request`, answered by `SandboxAnswer` with the job's id).
 */
export type SandboxJob = { id: number; input: unknown };
export type SandboxReply =
  | { ready: true }
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; code: ErrorCode; message: string }
  | { id: number; request: unknown };
export type SandboxAnswer = { id: number; answer: unknown } | { id: number; failed: string };

export type SandboxLimits = {
  /** Wall-clock budget for one job, from the moment a worker takes it. */
  timeoutMs: number;
  /** Each worker's JS heap (old generation); decoded streams are capped by decode-guard.ts. */
  maxMemoryMb: number;
};

const fromTs = extname(fileURLToPath(import.meta.url)) === '.ts';

/**
 * A sibling module (of this one, or of the module whose URL is `of`) with this module's extension:
 * `.ts` from the sources (tests, bench), `.js` once built, so the same code finds its worker file in both.
 */
export function siblingModule(name: string, of: string = import.meta.url): URL {
  return new URL(`./${name}${fromTs ? '.ts' : '.js'}`, of);
}

function spawn(file: URL, maxMemoryMb: number): Worker {
  return startWorker(file, {
    workerData: { maxMemoryMb },
    resourceLimits: {
      maxOldGenerationSizeMb: maxMemoryMb,
      maxYoungGenerationSizeMb: Math.min(64, Math.max(8, Math.round(maxMemoryMb / 8))),
      stackSizeMb: 4,
    },
  });
}

/**
 * A worker thread running `file` (a siblingModule-style URL), built or from the sources, without the parent's
 * flags (--input-type, --test, --inspect...): the worker needs none of them.
 */
export function startWorker(file: URL, opts: Pick<WorkerOptions, 'workerData' | 'resourceLimits'>): Worker {
  const options = { ...opts, execArgv: [] };
  if (!fromTs) return new Worker(file, options);
  // From the sources (tests, bench): Node.js strips the types, and the worker registers the resolve hook
  // that maps `./x.js` to `./x.ts` (module hooks are per thread) before it imports its entry.
  const hooks = new URL('../../scripts/ts-resolve.mjs', import.meta.url);
  const code = `import(${JSON.stringify(hooks.href)}).then(() => import(${JSON.stringify(file.href)}));`;
  return new Worker(code, { ...options, eval: true });
}

type Waiter = { owner: string; take: (slot: Slot) => void; timer: NodeJS.Timeout };

type Slot = {
  worker: Worker;
  ready: Promise<void>;
  jobs: number;
  idleTimer?: NodeJS.Timeout;
  dead: boolean;
};

export type PoolOptions = {
  /** Workers at most; further jobs wait. Bounds memory at size × maxMemoryMb. */
  size?: number;
  /** An idle worker is ended after this long. */
  idleMs?: number;
  /** A worker is replaced after this many jobs. */
  maxJobsPerWorker?: number;
  /** Jobs waiting for a worker, in all and per owner; past either, a job is refused at once (503). */
  maxQueue?: number;
  maxQueuePerOwner?: number;
};

/** Whose job this is and how long it may wait for a worker (the request's deadline includes the wait). */
export type RunOptions = {
  owner?: string;
  waitMs?: number;
  /** Answers the worker's requests during the job (the seal worker asks the parent to sign: the key stays here). */
  onRequest?: (request: unknown) => Promise<unknown>;
};

/** Pools alive in this process, for metrics (SandboxPool.stats). */
const livePools = new Set<SandboxPool>();

/** What /metrics shows of each kind of pool: workers alive, busy with a job, and jobs waiting for one. */
export type SandboxStats = { pool: string; workers: number; busy: number; queued: number };

/** Every live pool's counts, summed by kind (`prepare`, `render`, `seal`: its worker file's name). */
export function sandboxStats(): SandboxStats[] {
  const byKind = new Map<string, SandboxStats>();
  for (const p of livePools) {
    const s = p.stats();
    const sum = byKind.get(s.pool) ?? { pool: s.pool, workers: 0, busy: 0, queued: 0 };
    byKind.set(s.pool, { pool: s.pool, workers: sum.workers + s.workers, busy: sum.busy + s.busy, queued: sum.queued + s.queued });
  }
  return [...byKind.values()];
}

const busy = (message: string) => new AppError('SERVICE_UNAVAILABLE', message, { retryAfterSeconds: 5 }, { 'Retry-After': '5' });

/**
 * A small pool of worker threads for parsing untrusted files. Loading @libpdf/core takes most of a
 * second, so a worker that finished a job cleanly stays for the next one (until it is idle for
 * idleMs or has done maxJobsPerWorker jobs); a worker that ran out of time or memory, or crashed, is
 * terminated with its job. At most `size` workers exist, so concurrent uploads cannot multiply the
 * memory limit without bound.
 */
export class SandboxPool {
  private readonly slots = new Set<Slot>();
  private readonly idle: Slot[] = [];
  private readonly waiting: Waiter[] = [];
  /** Jobs holding a worker, by owner. */
  private readonly holding = new Map<string, number>();
  private nextId = 1;
  /** Workers kept however long they are idle (keepWarm). */
  private warm = 0;
  private closed = false;
  private readonly size: number;
  private readonly idleMs: number;
  private readonly maxJobs: number;
  private readonly maxQueue: number;
  private readonly maxQueuePerOwner: number;

  private readonly file: URL;
  private readonly maxMemoryMb: number;
  constructor(
    file: URL,
    maxMemoryMb: number,
    opts: PoolOptions = {},
  ) {
    this.file = file;
    this.maxMemoryMb = maxMemoryMb;
    this.size = opts.size ?? Math.max(2, Math.min(4, availableParallelism()));
    this.idleMs = opts.idleMs ?? 30_000;
    this.maxJobs = opts.maxJobsPerWorker ?? 1000;
    this.maxQueue = opts.maxQueue ?? this.size * 32;
    this.maxQueuePerOwner = opts.maxQueuePerOwner ?? 16;
    livePools.add(this);
  }

  /**
   * Runs one job. A refusal the worker reports as `{ok:false, code, message}` is rethrown as that
   * AppError; running out of time or memory is blamed on the input (INVALID_PDF), since the same
   * file would do it again.
   */
  async run<T>(input: unknown, transfer: ArrayBuffer[], timeoutMs: number, opts: RunOptions = {}): Promise<T> {
    const owner = opts.owner ?? '';
    const slot = await this.acquire(owner, opts.waitMs ?? timeoutMs);
    const id = this.nextId++;
    let healthy = false;
    try {
      const result = await new Promise<T>((resolve, reject) => {
        const done = () => {
          clearTimeout(timer);
          slot.worker.off('message', onMessage);
          slot.worker.off('error', onError);
          slot.worker.off('exit', onExit);
        };
        const timer = setTimeout(() => {
          done();
          reject(new AppError('INVALID_PDF', `The PDF took longer than ${timeoutMs} ms to process`));
        }, timeoutMs);
        const answer = (request: unknown) => {
          const asked = opts.onRequest ? opts.onRequest(request) : Promise.reject(new Error('this pool answers no requests'));
          const post = (a: SandboxAnswer) => {
            if (!slot.dead) slot.worker.postMessage(a);
          };
          asked.then(
            (value) => post({ id, answer: value }),
            (err: unknown) => post({ id, failed: String((err as Error)?.message ?? err) }),
          );
        };
        const onMessage = (m: SandboxReply) => {
          if ('request' in m) {
            if (m.id === id) answer(m.request);
            return;
          }
          if ('ready' in m || m.id !== id) return;
          done();
          healthy = true;
          if (m.ok) resolve(m.result as T);
          else reject(new AppError(m.code, m.message));
        };
        const onError = (err: Error & { code?: string }) => {
          done();
          reject(
            err.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? new AppError('INVALID_PDF', `The PDF needs more than ${this.maxMemoryMb} MB of memory to process`)
              : new AppError('INVALID_PDF', `The PDF could not be read (${err.message})`),
          );
        };
        const onExit = (code: number) => {
          done();
          reject(new AppError('INVALID_PDF', `The PDF could not be read (the parser stopped with code ${code})`));
        };
        slot.worker.on('message', onMessage);
        slot.worker.on('error', onError);
        slot.worker.on('exit', onExit);
        slot.worker.postMessage({ id, input } satisfies SandboxJob, transfer);
      });
      return result;
    } finally {
      this.hold(owner, -1);
      slot.jobs++;
      this.release(slot, healthy && slot.jobs < this.maxJobs);
    }
  }

  /**
   * Starts `count` workers now (at most the pool's size) and keeps that many alive however long they
   * are idle; one that ends (after maxJobsPerWorker jobs, or killed with its job) is replaced when its
   * job is over. A server that takes uploads then never loads the parser during a request: loading it
   * takes most of a second and some 25-30 MB, which an upload would otherwise pay whenever the pool
   * had been idle for idleMs.
   */
  keepWarm(count: number): void {
    this.warm = Math.min(count, this.size);
    this.refill();
  }

  /** Workers alive, busy or idle (tests, metrics). */
  get workers(): number {
    return this.slots.size;
  }

  /** Workers alive, those holding a job (not idle), and jobs waiting for one. */
  stats(): SandboxStats {
    return { pool: this.file.pathname.replace(/^.*\/|-worker\.[jt]s$/g, ''), workers: this.slots.size, busy: this.slots.size - this.idle.length, queued: this.waiting.length };
  }

  /** Ends every worker (shutdown, tests). Jobs still waiting for a worker stay waiting. */
  async close(): Promise<void> {
    this.closed = true;
    livePools.delete(this);
    const all = [...this.slots];
    this.slots.clear();
    this.idle.length = 0;
    await Promise.all(all.map((s) => this.kill(s)));
  }

  /** Counted when a worker is handed over, synchronously, so concurrent calls see each other. */
  private hold(owner: string, delta: 1 | -1): void {
    const n = (this.holding.get(owner) ?? 0) + delta;
    if (n > 0) this.holding.set(owner, n);
    else this.holding.delete(owner);
  }

  /**
   * A worker for `owner`'s job: at once when one is free and nobody waits, otherwise in the queue,
   * which is bounded in all and per owner and which a job leaves unserved (503) once it has waited
   * `waitMs`. A freed worker goes to the waiter whose owner holds the fewest workers (the oldest of
   * those), so a customer flooding the queue delays others by one job at most, and a customer alone
   * still gets every worker.
   */
  private async acquire(owner: string, waitMs: number): Promise<Slot> {
    for (;;) {
      let slot: Slot | undefined;
      if (this.waiting.length === 0) slot = this.idle.pop() ?? (this.slots.size < this.size ? this.start() : undefined);
      if (slot) this.hold(owner, 1);
      else slot = await this.enqueue(owner, waitMs);
      clearTimeout(slot.idleTimer);
      // Before waiting for it: a worker kept warm may still be starting, and parked workers are unref'd.
      slot.worker.ref();
      try {
        await slot.ready;
      } catch (err) {
        this.hold(owner, -1);
        void this.kill(slot);
        throw err;
      }
      if (!slot.dead) return slot;
      this.hold(owner, -1);
    }
  }

  private enqueue(owner: string, waitMs: number): Promise<Slot> {
    if (this.waiting.length >= this.maxQueue) throw busy('Too many documents are being processed; retry shortly');
    if (this.waiting.filter((w) => w.owner === owner).length >= this.maxQueuePerOwner) {
      throw busy('Too many of your documents are waiting to be processed; retry shortly');
    }
    return new Promise<Slot>((resolve, reject) => {
      const waiter: Waiter = {
        owner,
        take: (slot) => {
          clearTimeout(waiter.timer);
          resolve(slot);
        },
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1);
          reject(busy(`No document worker was free within ${waitMs} ms; retry shortly`));
        }, waitMs),
      };
      this.waiting.push(waiter);
    });
  }

  /** Removes and returns the oldest waiter among those whose owner holds the fewest workers. */
  private nextWaiter(): Waiter | undefined {
    if (this.waiting.length === 0) return undefined;
    const held = (w: Waiter) => this.holding.get(w.owner) ?? 0;
    let i = 0;
    for (let j = 1; j < this.waiting.length; j++) if (held(this.waiting[j]) < held(this.waiting[i])) i = j;
    const [next] = this.waiting.splice(i, 1);
    this.hold(next.owner, 1);
    return next;
  }

  private release(slot: Slot, keep: boolean): void {
    if (!keep || slot.dead) void this.kill(slot);
    const next = this.nextWaiter();
    if (keep && !slot.dead) {
      if (next) return next.take(slot);
      this.park(slot);
    } else if (next) next.take(this.start());
    else this.refill();
  }

  /** An idle worker waits for the next job; it is ended after idleMs unless it is one of those kept warm. */
  private park(slot: Slot): void {
    slot.worker.unref();
    slot.idleTimer = setTimeout(() => {
      if (this.slots.size > this.warm) void this.kill(slot);
    }, this.idleMs);
    slot.idleTimer.unref();
    this.idle.push(slot);
  }

  /** Starts idle workers until `warm` are alive. One that fails to start is not retried here: the next job starts its own. */
  private refill(): void {
    while (!this.closed && this.slots.size < this.warm) {
      const slot = this.start();
      slot.ready.then(
        () => undefined,
        () => void this.kill(slot),
      );
      this.park(slot);
    }
  }

  private start(): Slot {
    const worker = spawn(this.file, this.maxMemoryMb);
    const slot: Slot = { worker, jobs: 0, dead: false, ready: Promise.resolve() };
    this.slots.add(slot);
    // Between jobs nobody listens; an error then must not become an unhandled 'error' event.
    worker.on('error', () => undefined);
    worker.on('exit', () => {
      slot.dead = true;
      this.slots.delete(slot);
      const i = this.idle.indexOf(slot);
      if (i >= 0) this.idle.splice(i, 1);
    });
    slot.ready = new Promise<void>((resolve, reject) => {
      const onMessage = (m: SandboxReply) => {
        if ('ready' in m) {
          cleanup();
          resolve();
        }
      };
      // Failing before `ready` is our fault (missing file, syntax error), not the upload's.
      const onError = (err: Error) => {
        cleanup();
        reject(new Error(`PDF worker failed to start: ${err.message}`));
      };
      const onExit = (code: number) => {
        cleanup();
        reject(new Error(`PDF worker exited during start-up (code ${code})`));
      };
      const cleanup = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
    slot.ready.catch(() => undefined);
    return slot;
  }

  private async kill(slot: Slot): Promise<void> {
    clearTimeout(slot.idleTimer);
    slot.dead = true;
    this.slots.delete(slot);
    const i = this.idle.indexOf(slot);
    if (i >= 0) this.idle.splice(i, 1);
    await slot.worker.terminate();
  }
}
