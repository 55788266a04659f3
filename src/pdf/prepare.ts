import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { SandboxPool, siblingModule, type SandboxLimits } from './sandbox.js';
import type { PreparedDocument, UploadPart } from './types.js';

const WORKER = siblingModule('prepare-worker');
const pools = new Map<number, SandboxPool>();

/** What the worker is given: the parts, and where to write the document if it is not one uploaded file as it is. */
export type PrepareJob = { parts: UploadPart[]; out?: string };

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
 * Parts given as files are read by the worker, and the document comes back as a file: the one
 * uploaded file when it is used as it is, else a new file next to the first uploaded one (in the
 * request's upload directory, removed with it). Parts given as bytes come back as bytes.
 */
export async function prepareDocument(parts: Uint8Array[], opts: PrepareOptions): Promise<PreparedDocument & { bytes: Uint8Array }>;
export async function prepareDocument(parts: UploadPart[], opts: PrepareOptions): Promise<PreparedDocument>;
export async function prepareDocument(parts: UploadPart[], opts: PrepareOptions): Promise<PreparedDocument> {
  let pool = pools.get(opts.maxMemoryMb);
  if (!pool) pools.set(opts.maxMemoryMb, (pool = new SandboxPool(WORKER, opts.maxMemoryMb, { size: opts.workers })));
  const firstFile = parts.find((p) => typeof p === 'string');
  const job: PrepareJob = { parts, out: firstFile && path.join(path.dirname(firstFile), `document-${randomUUID()}.pdf`) };
  const transfer = opts.transfer
    ? parts.filter((p): p is Uint8Array => typeof p !== 'string' && p.buffer instanceof ArrayBuffer && p.byteOffset === 0 && p.byteLength === p.buffer.byteLength).map((p) => p.buffer as ArrayBuffer)
    : [];
  return pool.run<PreparedDocument>(job, [...new Set(transfer)], opts.timeoutMs, { owner: opts.owner });
}

/** Ends the parsing workers (graceful shutdown; tests). */
export async function closePdfWorkers(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.close()));
}
