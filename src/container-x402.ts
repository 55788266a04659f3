import type { X402Config } from './config.js';
import { createX402Repo } from './modules/x402/x402.repo.js';
import { createX402Service } from './modules/x402/x402.service.js';
import { createX402Chain } from './providers/payments/x402-chain.js';
import { createX402Facilitator } from './providers/payments/x402-facilitator.js';

type Deps = Omit<Parameters<typeof createX402Service>[0], 'config' | 'facilitator' | 'repo' | 'chain'>;

/**
 * The composition root's x402 pay-per-call, on when X402_* is configured; the facilitator is reached
 * on the first paid call. Its own module, imported only then: with x402 off (the default) @x402/* and
 * viem (some 500 modules) never load (docs/operating.md: Memory).
 */
export function createX402(config: X402Config, deps: Deps) {
  return {
    config,
    service: createX402Service({
      ...deps,
      config,
      facilitator: createX402Facilitator(config),
      repo: createX402Repo(),
      chain: config.rpcUrl ? createX402Chain({ ...config, rpcUrl: config.rpcUrl }) : undefined,
    }),
  };
}
