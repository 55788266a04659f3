import { SandboxPool, siblingModule, type SandboxLimits } from './sandbox.js';
import type { PreparedDocument } from './types.js';

const WORKER = siblingModule('prepare-worker');
const pools = new Map<number, SandboxPool>();

export type PrepareOptions = SandboxLimits & {
  /**
   * Move the parts' memory to the worker instead of copying it (a 25 MB upload is then not held
   * twice). The caller's arrays are detached afterwards: use the returned `bytes`. Only arrays that
   * own their whole ArrayBuffer are moved; the rest are copied.
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
 */
export async function prepareDocument(parts: Uint8Array[], opts: PrepareOptions): Promise<PreparedDocument> {
  let pool = pools.get(opts.maxMemoryMb);
  if (!pool) pools.set(opts.maxMemoryMb, (pool = new SandboxPool(WORKER, opts.maxMemoryMb, { size: opts.workers })));
  const transfer = opts.transfer
    ? parts.filter((p) => p.buffer instanceof ArrayBuffer && p.byteOffset === 0 && p.byteLength === p.buffer.byteLength).map((p) => p.buffer as ArrayBuffer)
    : [];
  const { unchanged: _, ...doc } = await pool.run<PreparedDocument & { unchanged?: boolean }>(parts, [...new Set(transfer)], opts.timeoutMs, { owner: opts.owner });
  return doc;
}

/** Ends the parsing workers (graceful shutdown; tests). */
export async function closePdfWorkers(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.close()));
}
