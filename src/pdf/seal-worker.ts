/**
 * Worker-thread entry that seals documents for sealInSandbox (see seal-sandbox.ts): the stamping,
 * the decoding of signature images and the saving run here, off the main thread, with the same
 * decode bounds as the parsing worker. The private key stays in the parent: the worker gets the
 * certificate and asks the parent to sign the CMS attributes (one small request per document).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { DigestAlgorithm, KeyType, SignatureAlgorithm, Signer } from '@libpdf/core';
import { AppError } from '../errors.js';
import { boundedFetchFn } from '../providers/certs/fetch-bounded.js';
import { installDecodeGuard } from './decode-guard.js';
import type { SandboxAnswer, SandboxJob, SandboxReply } from './sandbox.js';
import { retimestampDocument, sealDocument, type RetimestampInput, type SealInput } from './seal.js';

export type SignerInfo = { certificate: Uint8Array; certificateChain?: Uint8Array[]; keyType: KeyType; signatureAlgorithm: SignatureAlgorithm };
export type SealJobInput = Omit<SealInput, 'signer'> & { signer: SignerInfo };
export type SignRequest = { data: Uint8Array; algorithm: DigestAlgorithm };

const { maxMemoryMb } = workerData as { maxMemoryMb: number };
const MB = 1024 * 1024;
const guard = await installDecodeGuard({ perStreamBytes: Math.max(16, maxMemoryMb / 2) * MB, totalBytes: Math.max(64, maxMemoryMb * 4) * MB, limitMb: maxMemoryMb });
const bombMessage = `The document contains a compressed stream that expands beyond the ${maxMemoryMb} MB limit`;

// @libpdf/core fetches a chain's missing certificates (AIA) with globalThis.fetch and times only the
// headers: in this thread, which only seals, every such fetch is bounded in time and size.
globalThis.fetch = boundedFetchFn({ timeoutMs: 15_000, maxBytes: 1024 * 1024 });

const port = parentPort!;
const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

/** The parent's signer, seen from here: same certificate, signatures made over there. */
function remoteSigner(jobId: number, info: SignerInfo): Signer {
  return {
    ...info,
    sign: (data, algorithm) =>
      new Promise<Uint8Array>((resolve, reject) => {
        pending.set(jobId, { resolve: resolve as (v: unknown) => void, reject });
        port.postMessage({ id: jobId, request: { data, algorithm } satisfies SignRequest } satisfies SandboxReply);
      }),
  };
}

port.on('message', async (m: SandboxJob | SandboxAnswer) => {
  if (!('input' in m)) {
    const waiter = pending.get(m.id);
    pending.delete(m.id);
    if ('answer' in m) waiter?.resolve(m.answer);
    else waiter?.reject(new Error(m.failed));
    return;
  }
  const { id, input } = m;
  guard?.reset();
  let reply: SandboxReply;
  const transfer: ArrayBuffer[] = [];
  try {
    const job = input as SealJobInput | { retimestamp: RetimestampInput };
    const bytes = 'retimestamp' in job ? await retimestampDocument(job.retimestamp) : await sealDocument({ ...job, signer: remoteSigner(id, job.signer) });
    if (guard?.tripped()) throw new AppError('INVALID_PDF', bombMessage);
    reply = { id, ok: true, result: bytes };
    if (bytes.buffer instanceof ArrayBuffer) transfer.push(bytes.buffer);
  } catch (err) {
    if (guard?.tripped()) reply = { id, ok: false, code: 'INVALID_PDF', message: bombMessage };
    else if (err instanceof AppError) reply = { id, ok: false, code: err.code, message: err.message };
    else reply = { id, ok: false, code: 'INTERNAL_ERROR', message: `Sealing failed: ${String((err as Error)?.message ?? err).slice(0, 200)}` };
  }
  pending.delete(id);
  port.postMessage(reply, transfer);
});
port.postMessage({ ready: true } satisfies SandboxReply);
