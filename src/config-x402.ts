import { ConfigError } from './config-error.js';

/** The x402 variables as config.ts validated them (shapes checked, defaults applied). */
export type X402Env = {
  X402_FACILITATOR_URL?: string;
  X402_NETWORK?: string;
  X402_ASSET?: string;
  X402_PAY_TO?: string;
  X402_ASSET_NAME?: string;
  X402_ASSET_VERSION: string;
  X402_MIN_PRICE: string;
  X402_SETTLE_TIMEOUT_MS: number;
  X402_RPC_URL?: string;
};

export type X402Config = Readonly<{
  facilitatorUrl: string;
  /** CAIP-2, e.g. eip155:84532 (Base Sepolia). */
  network: string;
  asset: string;
  payTo: string;
  /** The token's EIP-712 domain, which the payer signs over. */
  assetName: string;
  assetVersion: string;
  /** What a mutating route with no price of its own charges an x402 caller. */
  minPriceMicros: bigint;
  /** Bound on each facilitator call (verify, settle), and on each read of the chain. */
  timeoutMs: number;
  /** JSON-RPC of the network, read by the settlement sweep; undefined: a settle with no clear outcome is left to an operator. */
  rpcUrl: string | undefined;
}>;

/** "0.001" → 1000 micros. */
const usdToMicros = (usd: string): bigint => {
  const [whole, frac = ''] = usd.split('.');
  return BigInt(whole) * 1_000_000n + BigInt(frac.padEnd(6, '0'));
};

export function x402Config(e: X402Env): X402Config | undefined {
  const required = { X402_FACILITATOR_URL: e.X402_FACILITATOR_URL, X402_NETWORK: e.X402_NETWORK, X402_ASSET: e.X402_ASSET, X402_PAY_TO: e.X402_PAY_TO, X402_ASSET_NAME: e.X402_ASSET_NAME };
  const missing = Object.entries(required).filter(([, v]) => v === undefined).map(([k]) => k);
  if (missing.length === Object.keys(required).length) return undefined;
  // Half a configuration is a mistake, not "off": say so at start rather than refuse payments later.
  if (missing.length) throw new ConfigError(`Invalid configuration: ${missing[0]}: required when x402 is configured (set all of ${Object.keys(required).join(', ')})`);
  const minPriceMicros = usdToMicros(e.X402_MIN_PRICE);
  if (minPriceMicros <= 0n) throw new ConfigError('Invalid configuration: X402_MIN_PRICE: must be above 0');
  return Object.freeze({
    facilitatorUrl: e.X402_FACILITATOR_URL!,
    network: e.X402_NETWORK!,
    asset: e.X402_ASSET!,
    payTo: e.X402_PAY_TO!,
    assetName: e.X402_ASSET_NAME!,
    assetVersion: e.X402_ASSET_VERSION,
    minPriceMicros,
    timeoutMs: e.X402_SETTLE_TIMEOUT_MS,
    rpcUrl: e.X402_RPC_URL,
  });
}
