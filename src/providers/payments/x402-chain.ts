import { createPublicClient, http, parseAbi, parseAbiItem, type Hex } from 'viem';

export type X402ChainOptions = { rpcUrl: string; asset: string; timeoutMs: number };

/** What the token says of one EIP-3009 authorization: unused, or used, by the transfer in txHash when a log names it. */
export type AuthorizationState = { used: false } | { used: true; txHash: string | undefined };

const STATE_ABI = parseAbi(['function authorizationState(address authorizer, bytes32 nonce) view returns (bool)']);
const AUTHORIZATION_USED = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');
/** Blocks sampled to estimate the chain's block time, and slack for clocks that disagree. */
const SAMPLE_BLOCKS = 1000n;
const SLACK_SECONDS = 600n;

/**
 * Reads the x402 asset's EIP-3009 state over JSON-RPC (X402_RPC_URL), for the settlement sweep: whether
 * an authorization was used, and by which transaction. Reads only; Signet holds no key. A used
 * authorization with no AuthorizationUsed log was cancelled by its payer (no transfer), or its transfer
 * lies before the blocks read (from the settle's time, at the chain's measured block time, less slack).
 */
export function createX402Chain(opts: X402ChainOptions) {
  const client = createPublicClient({ transport: http(opts.rpcUrl, { timeout: opts.timeoutMs, retryCount: 0 }) });
  const asset = opts.asset as Hex;

  /** The first block that can hold a transaction sent at `since`. */
  async function blockAround(since: Date): Promise<bigint> {
    const latest = await client.getBlock();
    const sample = latest.number < SAMPLE_BLOCKS ? latest.number : SAMPLE_BLOCKS;
    if (sample === 0n) return 0n;
    const older = await client.getBlock({ blockNumber: latest.number - sample });
    const elapsed = latest.timestamp - older.timestamp;
    // Blocks made in the same second (a local chain): read them all.
    if (elapsed <= 0n) return 0n;
    const ago = latest.timestamp - BigInt(Math.floor(since.getTime() / 1000)) + SLACK_SECONDS;
    const back = ago <= 0n ? 0n : (ago * sample) / elapsed + 1n;
    return back >= latest.number ? 0n : latest.number - back;
  }

  return {
    async authorization(payer: string, nonce: string, since: Date): Promise<AuthorizationState> {
      const used = await client.readContract({ address: asset, abi: STATE_ABI, functionName: 'authorizationState', args: [payer as Hex, nonce as Hex] });
      if (!used) return { used: false };
      const logs = await client.getLogs({ address: asset, event: AUTHORIZATION_USED, args: { authorizer: payer as Hex, nonce: nonce as Hex }, fromBlock: await blockAround(since), toBlock: 'latest' });
      return { used: true, txHash: logs[0]?.transactionHash ?? undefined };
    },
  };
}

export type X402Chain = ReturnType<typeof createX402Chain>;
