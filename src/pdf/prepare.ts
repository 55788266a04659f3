import { SandboxPool, siblingModule, type SandboxLimits } from './sandbox.js';
import type { PreparedDocument, UploadPart } from './types.js';

const WORKER = siblingModule('prepare-worker');
const pools = new Map<number, SandboxPool>();

/** What the worker is given: the parts, as files or bytes. */
export type PrepareJob = { parts: UploadPart[] };

export type PrepareOptions = SandboxLimits & {
  /**
   * Move the memory of parts given as bytes to the worker instead of copying it. The caller's arrays
   * are detached afterwards: use the returned document. Only arrays that own their whole ArrayBuffer
   * are moved; the rest are copied.
   */
  transfer?: boolean;
  /** Parsing workers at most (read when the first call with this memory limit creates the pool). */
  workers?: number;
  /** Whose upload this is: the queue for workers is fair per owner (customer). */
  owner?: string;
};

/**
 * Validates the uploaded PDF part(s), joins them in order into the envelope's one document and finds
 * its page boxes and `{{type, rN}}` markers, in a worker thread with a heap limit and a deadline, so
 * a hostile file costs one request, not the server. Throws AppError('INVALID_PDF') for a file that
 * is not a PDF, is damaged beyond repair, is encrypted, or exceeds the limits.
 *
 * Parts given as files are read by the worker, and the document comes back as a file: the first
 * uploaded file, rewritten in place when the document is not that file as it is (several parts joined,
 * or a repaired file). The files are the request's uploads, which it no longer needs once read: so
 * the document is one of them, removed with them when the request ends (or moved into storage before),
 * and no other file is made that could outlive the request. Parts given as bytes come back as bytes.
 */
export async function prepareDocument(parts: Uint8Array[], opts: PrepareOptions): Promise<PreparedDocument & { bytes: Uint8Array }>;
export async function prepareDocument(parts: UploadPart[], opts: PrepareOptions): Promise<PreparedDocument>;
export async function prepareDocument(parts: UploadPart[], opts: PrepareOptions): Promise<PreparedDocument> {
  const pool = poolFor(opts);
  const job: PrepareJob = { parts };
  const transfer = opts.transfer
    ? parts.filter((p): p is Uint8Array => typeof p !== 'string' && p.buffer instanceof ArrayBuffer && p.byteOffset === 0 && p.byteLength === p.buffer.byteLength).map((p) => p.buffer as ArrayBuffer)
    : [];
  return pool.run<PreparedDocument>(job, [...new Set(transfer)], opts.timeoutMs, { owner: opts.owner });
}

/** The pool of workers with this memory limit (created by the first call, with its `workers`). */
function poolFor(opts: Pick<PrepareOptions, 'maxMemoryMb' | 'workers'>): SandboxPool {
  let pool = pools.get(opts.maxMemoryMb);
  if (!pool) pools.set(opts.maxMemoryMb, (pool = new SandboxPool(WORKER, opts.maxMemoryMb, { size: opts.workers })));
  return pool;
}

/**
 * Starts `count` parsing workers now and keeps them however long they are idle (PDF_PARSE_WARM_WORKERS):
 * no upload then waits for the parser to load, at some 29 MiB of RSS each held for ever (see
 * SandboxPool.keepWarm). Give the options prepareDocument will be given.
 */
export function warmPdfWorkers(opts: Pick<PrepareOptions, 'maxMemoryMb' | 'workers'>, count: number): void {
  poolFor(opts).keepWarm(count);
}

/** Ends the parsing workers (graceful shutdown; tests). */
export async function closePdfWorkers(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.close()));
}
