/**
 * Worker-thread entry that parses untrusted uploads for prepareDocument (see sandbox.ts): one job
 * at a time, answered by id. Refusals travel back as {code, message}; the parent rethrows them.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { AppError } from '../errors.js';
import { prepareInProcess } from './document.js';
import { installDecodeGuard } from './decode-guard.js';
import type { SandboxJob, SandboxReply } from './sandbox.js';

const { maxMemoryMb } = workerData as { maxMemoryMb: number };
const MB = 1024 * 1024;
// One stream may use half the heap budget; all streams of one job together four times it.
const guard = await installDecodeGuard({ perStreamBytes: Math.max(16, maxMemoryMb / 2) * MB, totalBytes: Math.max(64, maxMemoryMb * 4) * MB });
const bombMessage = `The PDF contains a compressed stream that expands beyond the ${maxMemoryMb} MB limit`;

const port = parentPort!;
port.on('message', async ({ id, input }: SandboxJob) => {
  guard?.reset();
  let reply: SandboxReply;
  const transfer: ArrayBuffer[] = [];
  try {
    const result = await prepareInProcess(input as Uint8Array[]);
    // libpdf swallows the guard's error and reads the stream as empty: ask the guard.
    if (guard?.tripped()) throw new AppError('INVALID_PDF', bombMessage);
    reply = { id, ok: true, result };
    if (result.bytes.buffer instanceof ArrayBuffer) transfer.push(result.bytes.buffer);
  } catch (err) {
    if (guard?.tripped()) reply = { id, ok: false, code: 'INVALID_PDF', message: bombMessage };
    else if (err instanceof AppError) reply = { id, ok: false, code: err.code, message: err.message };
    else reply = { id, ok: false, code: 'INVALID_PDF', message: `The PDF could not be read (${String((err as Error)?.message ?? err).slice(0, 160)})` };
  }
  port.postMessage(reply, transfer);
});
port.postMessage({ ready: true } satisfies SandboxReply);
