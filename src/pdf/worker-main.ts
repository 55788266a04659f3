/**
 * The body the sandbox workers share (see sandbox.ts): the decode guard sized from the worker's memory
 * budget, one job at a time answered by id, refusals sent back as {code, message} for the parent to
 * rethrow, and the "ready" message once all of that is in place.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { AppError, type ErrorCode } from '../errors.js';
import { collectGarbage } from '../lib/gc.js';
import { DecodeRefusal, installDecodeGuard } from './decode-guard.js';
import type { SandboxJob, SandboxReply } from './sandbox.js';

export type WorkerJobs = {
  /** What the refusal of a decompression bomb calls the input ("The PDF", "The document"). */
  subject: string;
  /** Does the job; `bytes` (the result's PDF, if it travels back at all) is transferred to the parent rather than copied. */
  run(input: unknown): Promise<{ result: unknown; bytes?: Uint8Array }>;
  /** The refusal for an error that is not an AppError; `detail` is its message. */
  unexpected(detail: string): { code: ErrorCode; message: string };
};

export async function serveJobs(jobs: WorkerJobs): Promise<void> {
  const { maxMemoryMb } = workerData as { maxMemoryMb: number };
  const MB = 1024 * 1024;
  // One stream may use half the heap budget; all streams of one job together four times it.
  const guard = await installDecodeGuard({ perStreamBytes: Math.max(16, maxMemoryMb / 2) * MB, totalBytes: Math.max(64, maxMemoryMb * 4) * MB, limitMb: maxMemoryMb });
  const bombMessage = `${jobs.subject} contains a compressed stream that expands beyond the ${maxMemoryMb} MB limit`;

  // A job's input (a file of up to MAX_PDF_BYTES, read whole) is dead once the job is answered, but
  // would stay resident until V8 next collects, and pile up over jobs (see collectGarbage). So a job
  // that leaves COLLECT_ABOVE more Buffer memory than the worker holds between jobs is followed by a
  // collection, while the parent carries on. What is held is measured again at the next job (the
  // collection's sweep is done by then), so memory the worker keeps (a font, once loaded) is not
  // collected for again and again.
  const COLLECT_ABOVE = 8 * MB;
  const arrayBuffers = () => process.memoryUsage().arrayBuffers;
  let held = arrayBuffers();
  let collected = false;

  const port = parentPort!;
  port.on('message', async ({ id, input }: SandboxJob) => {
    if (collected) [held, collected] = [arrayBuffers(), false];
    guard?.reset();
    let reply: SandboxReply;
    const transfer: ArrayBuffer[] = [];
    try {
      const { result, bytes } = await jobs.run(input);
      // libpdf swallows the guard's error and reads the stream as empty: ask the guard.
      if (guard?.tripped()) throw new AppError('INVALID_PDF', bombMessage);
      reply = { id, ok: true, result };
      if (bytes?.buffer instanceof ArrayBuffer) transfer.push(bytes.buffer);
    } catch (err) {
      // A refusal that names the page keeps its words; any other error after a limit was reached is the bomb's.
      if (guard?.tripped() && !(err instanceof DecodeRefusal)) reply = { id, ok: false, code: 'INVALID_PDF', message: bombMessage };
      else if (err instanceof AppError) reply = { id, ok: false, code: err.code, message: err.message };
      else reply = { id, ok: false, ...jobs.unexpected(String((err as Error)?.message ?? err)) };
    }
    port.postMessage(reply, transfer);
    if (arrayBuffers() > held + COLLECT_ABOVE) {
      collectGarbage('major');
      collected = true;
    }
  });
  port.postMessage({ ready: true } satisfies SandboxReply);
}
