import type { Signer } from '@libpdf/core';
import { SandboxPool, siblingModule, type SandboxLimits } from './sandbox.js';
import type { SealInput } from './seal.js';
import type { SealJobInput, SignRequest } from './seal-worker.js';

const WORKER = siblingModule('seal-worker');
const pools = new Map<number, SandboxPool>();

export type SealOptions = SandboxLimits & {
  /** Sealing workers at most (read when the first call with this memory limit creates the pool). */
  workers?: number;
};

/**
 * sealDocument in a worker thread with a heap limit, decode bounds and a deadline: a seal is the
 * heaviest thing Signet does (it decodes recipients' images and rewrites the document), and on the
 * main thread it would stall the event loop, health checks and the job lease heartbeat with it.
 * The signer stays here; the worker asks it to sign. Rejects with the worker's AppError (INVALID_PDF
 * for time, memory or decode limits) so the seal job fails and is retried or ends dead.
 */
export async function sealInSandbox(input: SealInput, opts: SealOptions): Promise<Uint8Array> {
  let pool = pools.get(opts.maxMemoryMb);
  if (!pool) pools.set(opts.maxMemoryMb, (pool = new SandboxPool(WORKER, opts.maxMemoryMb, { size: opts.workers ?? 1 })));
  const { signer, ...rest } = input;
  const job: SealJobInput = { ...rest, signer: signerInfo(signer) };
  const sealed = await pool.run<Uint8Array>(job, [], opts.timeoutMs, {
    owner: input.certificate.envelopeId,
    onRequest: async (request) => {
      const { data, algorithm } = request as SignRequest;
      return signer.sign(data, algorithm);
    },
  });
  return sealed;
}

function signerInfo(s: Signer): SealJobInput['signer'] {
  return { certificate: s.certificate, certificateChain: s.certificateChain, keyType: s.keyType, signatureAlgorithm: s.signatureAlgorithm };
}

/** Ends the sealing workers (graceful shutdown; tests). */
export async function closeSealWorkers(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.close()));
}
