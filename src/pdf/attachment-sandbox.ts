import { AppError } from '../errors.js';
import type { AttachmentCheck, AttachmentCheckJob } from './attachment-check.js';
import { SandboxPool, siblingModule, type SandboxLimits } from './sandbox.js';

const WORKER = siblingModule('attachment-worker');
const pools = new Map<number, SandboxPool>();

export type AttachmentCheckOptions = SandboxLimits & { owner?: string };

/**
 * Checks and decodes a signer's attachment in a worker thread with a heap limit, decode bounds and a
 * deadline (attachment-check.ts): a pool of its own, so an attachment never waits behind an upload's
 * parse or a seal. Running out of time or memory, or a stream past the decode bound, is the file's
 * doing: ATTACHMENT_BOMB.
 */
export async function checkAttachment(job: AttachmentCheckJob, opts: AttachmentCheckOptions): Promise<AttachmentCheck> {
  let pool = pools.get(opts.maxMemoryMb);
  if (!pool) pools.set(opts.maxMemoryMb, (pool = new SandboxPool(WORKER, opts.maxMemoryMb, { size: 2 })));
  try {
    return await pool.run<AttachmentCheck>(job, [], opts.timeoutMs, { owner: opts.owner });
  } catch (err) {
    // The pool's and the guard's own refusals name "the PDF" and INVALID_PDF whatever the file was.
    if (err instanceof AppError && err.code === 'INVALID_PDF') {
      const bomb = /expands beyond|longer than|more than \d+ MB/.test(err.message);
      throw new AppError(bomb ? 'ATTACHMENT_BOMB' : 'ATTACHMENT_INVALID', err.message.replace(/^The (PDF|attachment)/, 'The attached file'));
    }
    throw err;
  }
}

/** Ends the attachment workers (graceful shutdown; tests). */
export async function closeAttachmentWorkers(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.close()));
}
