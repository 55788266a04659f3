import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server';
import type { Network } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/server';

export type X402FacilitatorOptions = { facilitatorUrl: string; network: string; timeoutMs: number };

/**
 * The x402 resource server of @x402/core, talking to a facilitator over HTTP, with the EVM `exact`
 * scheme registered for the configured network. The protocol is theirs; this only builds it once and
 * learns what the facilitator supports on first use (not at boot, so a facilitator that is down costs
 * paid calls a 503, not the whole server its start). A failed first contact is retried on the next call.
 */
export function createX402Facilitator(opts: X402FacilitatorOptions) {
  // The timeout bounds every verify and settle: a paid call waits for them (outside any transaction).
  const client = new HTTPFacilitatorClient({ url: opts.facilitatorUrl, timeoutMs: opts.timeoutMs });
  const server = new x402ResourceServer(client).register(opts.network as Network, new ExactEvmScheme());
  let ready: Promise<x402ResourceServer> | undefined;
  return {
    /** The initialized server; rejects while the facilitator cannot be reached. */
    server(): Promise<x402ResourceServer> {
      ready ??= server.initialize().then(
        () => server,
        (err: unknown) => {
          ready = undefined;
          throw err;
        },
      );
      return ready;
    },
  };
}

export type X402Facilitator = ReturnType<typeof createX402Facilitator>;
