import type { Signer } from '@libpdf/core';
import { SandboxPool, siblingModule, type SandboxLimits } from './sandbox.js';
import type { PadesLevel, SigningConfig } from '../config-signing.js';
import { chainHasRevocationInfo } from '../providers/certs/revocation.js';
import type { RetimestampInput, SealInput, SealPades } from './seal.js';
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

/** retimestampDocument in a sealing worker: it parses and rewrites a whole stored document, as sealing does. */
export async function retimestampInSandbox(input: RetimestampInput, opts: SealOptions & { owner: string }): Promise<Uint8Array> {
  let pool = pools.get(opts.maxMemoryMb);
  if (!pool) pools.set(opts.maxMemoryMb, (pool = new SandboxPool(WORKER, opts.maxMemoryMb, { size: opts.workers ?? 1 })));
  return pool.run<Uint8Array>({ retimestamp: input }, [], opts.timeoutMs, { owner: opts.owner });
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

/** The level a seal is actually made at (what the certificate page may print): B-LT and B-LTA need a chain that publishes revocation information. */
export function sealLevelFor(configured: PadesLevel, signer: Pick<Signer, 'certificate' | 'certificateChain'>): PadesLevel {
  if ((configured === 'B-LT' || configured === 'B-LTA') && !chainHasRevocationInfo([signer.certificate, ...(signer.certificateChain ?? [])])) return 'B-T';
  return configured;
}

export type SealerDeps = {
  getSigner: () => Promise<{ signer: Signer }>;
  signing: SigningConfig;
  limits: SealOptions;
  logger: { warn(obj: object, msg?: string): void };
};

/**
 * The seal job's SealFn: the configured level, lowered to B-T when it asks for long-term validation
 * but the sealing chain publishes no revocation information (the self-signed development seal): there
 * is nothing to embed, and that is said in the log once per process, not once per seal.
 */
export function createSealer(deps: SealerDeps): (input: Omit<SealInput, 'signer' | 'pades'>) => Promise<Uint8Array> {
  let warned = false;
  return async (input) => {
    const { signer } = await deps.getSigner();
    const level = sealLevelFor(deps.signing.level, signer);
    if (level !== deps.signing.level && !warned) {
      warned = true;
      deps.logger.warn({ configured: deps.signing.level, sealedAt: level }, `SIGNING_PADES_LEVEL=${deps.signing.level}, but the sealing certificate's chain publishes no revocation information (no OCSP or CRL address): documents are sealed PAdES ${level}`);
    }
    const { tsa } = deps.signing;
    const pades: SealPades = { level, tsa: tsa && { urls: tsa.urls, headers: tsa.headers, timeoutMs: tsa.timeoutMs }, revocationTimeoutMs: deps.signing.revocationTimeoutMs };
    // The certificate page names the level this seal is made at, which may be lower than the configured one.
    const certificate = { ...input.certificate, sealLevel: level, tsaName: level === 'B-B' ? null : (tsa?.name ?? null) };
    return sealInSandbox({ ...input, certificate, signer, pades }, deps.limits);
  };
}
