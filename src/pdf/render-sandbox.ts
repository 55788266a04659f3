import { SandboxPool, siblingModule, type SandboxLimits } from './sandbox.js';
import type { StampInput } from './seal.js';

const WORKER = siblingModule('render-worker');
const pools = new Map<number, SandboxPool>();

export type RenderOptions = SandboxLimits & {
  /** Whose document this is: the queue for workers is fair per owner. */
  owner?: string;
  /** Rendering workers at most (read when the first call with this memory limit creates the pool). */
  workers?: number;
};

/**
 * renderDocument (seal.ts) in a worker thread with a heap limit, decode bounds and a deadline: it
 * decodes the upload and recipients' signature images, untrusted bytes that must not reach the main
 * thread (DESIGN §4.15). A pool of its own, so a recipient's view never waits behind a seal.
 */
export async function renderInSandbox(input: StampInput, opts: RenderOptions): Promise<Uint8Array> {
  let pool = pools.get(opts.maxMemoryMb);
  if (!pool) pools.set(opts.maxMemoryMb, (pool = new SandboxPool(WORKER, opts.maxMemoryMb, { size: opts.workers ?? 2 })));
  return pool.run<Uint8Array>(input, [], opts.timeoutMs, { owner: opts.owner });
}

/** Ends the rendering workers (graceful shutdown; tests). */
export async function closeRenderWorkers(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.close()));
}
