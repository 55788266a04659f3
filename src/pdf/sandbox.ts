import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { AppError, type ErrorCode } from '../http/errors.js';

/** Messages of the sandbox protocol. The worker posts `ready` once loaded, then one reply per job. */
export type SandboxJob = { id: number; input: unknown };
export type SandboxReply = { ready: true } | { id: number; ok: true; result: unknown } | { id: number; ok: false; code: ErrorCode; message: string };

export type SandboxLimits = {
  /** Wall-clock budget for one job, from the moment a worker takes it. */
  timeoutMs: number;
  /** Each worker's JS heap (old generation); inflated streams are capped by inflate-guard.ts. */
  maxMemoryMb: number;
};

const fromTs = extname(fileURLToPath(import.meta.url)) === '.ts';

/**
 * A sibling module with this module's extension: `.ts` under tsx (tests, bench), `.js` once built,
 * so the same code finds its worker file in both.
 */
export function siblingModule(name: string): URL {
  return new URL(`./${name}${fromTs ? '.ts' : '.js'}`, import.meta.url);
}

function spawn(file: URL, maxMemoryMb: number): Worker {
  const options = {
    // Not the parent's flags (--input-type, --test, --inspect...): the worker needs none of them.
    execArgv: [],
    workerData: { maxMemoryMb },
    resourceLimits: {
      maxOldGenerationSizeMb: maxMemoryMb,
      maxYoungGenerationSizeMb: Math.min(64, Math.max(8, Math.round(maxMemoryMb / 8))),
      stackSizeMb: 4,
    },
  };
  if (!fromTs) return new Worker(file, options);
  // Under tsx. Node 20 resolves a worker's entry before `execArgv: ['--import', 'tsx']` takes
  // effect (ERR_UNKNOWN_FILE_EXTENSION), so register tsx's loader from a bootstrap, then import.
  // @libpdf/core is loaded first, outside the loader, which would otherwise re-transform its
  // 1.4 MB bundle in every worker.
  const lib = import.meta.resolve('@libpdf/core');
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(lib)}).then(() => import(${JSON.stringify(tsx)})).then((m) => { m.register(); return import(${JSON.stringify(file.href)}); });`;
  return new Worker(code, { ...options, eval: true });
}

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
};

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
  private readonly waiting: ((slot: Slot) => void)[] = [];
  private nextId = 1;
  private readonly size: number;
  private readonly idleMs: number;
  private readonly maxJobs: number;

  constructor(
    private readonly file: URL,
    private readonly maxMemoryMb: number,
    opts: PoolOptions = {},
  ) {
    this.size = opts.size ?? Math.max(2, Math.min(4, availableParallelism()));
    this.idleMs = opts.idleMs ?? 30_000;
    this.maxJobs = opts.maxJobsPerWorker ?? 1000;
  }

  /**
   * Runs one job. A refusal the worker reports as `{ok:false, code, message}` is rethrown as that
   * AppError; running out of time or memory is blamed on the input (INVALID_PDF), since the same
   * file would do it again.
   */
  async run<T>(input: unknown, transfer: ArrayBuffer[], timeoutMs: number): Promise<T> {
    const slot = await this.acquire();
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
        const onMessage = (m: SandboxReply) => {
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
      slot.jobs++;
      this.release(slot, healthy && slot.jobs < this.maxJobs);
    }
  }

  /** Ends every worker (shutdown, tests). Jobs still waiting for a worker stay waiting. */
  async close(): Promise<void> {
    const all = [...this.slots];
    this.slots.clear();
    this.idle.length = 0;
    await Promise.all(all.map((s) => this.kill(s)));
  }

  private async acquire(): Promise<Slot> {
    for (;;) {
      const slot = this.idle.pop() ?? (this.slots.size < this.size ? this.start() : await new Promise<Slot>((r) => this.waiting.push(r)));
      clearTimeout(slot.idleTimer);
      try {
        await slot.ready;
      } catch (err) {
        void this.kill(slot);
        throw err;
      }
      if (!slot.dead) {
        slot.worker.ref();
        return slot;
      }
    }
  }

  private release(slot: Slot, keep: boolean): void {
    if (!keep || slot.dead) void this.kill(slot);
    const next = this.waiting.shift();
    if (keep && !slot.dead) {
      if (next) return next(slot);
      slot.worker.unref();
      slot.idleTimer = setTimeout(() => void this.kill(slot), this.idleMs);
      slot.idleTimer.unref();
      this.idle.push(slot);
    } else if (next) next(this.start());
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
