const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * viem (some 350 modules, with ox and abitype some 10 MiB of heap) is imported with the first address
 * that needs a checksum, not with the server: most servers never see a wallet (docs/operating.md: Memory).
 */
const viem = () => import('viem');

/**
 * `0x` and 40 hex digits → the lower-case form we store and put in tokens; undefined otherwise. A
 * mixed-case spelling is an EIP-55 checksum and must be right (a typo in it is caught here rather than
 * signing in as a wallet nobody holds); all lower or all upper case carries no checksum.
 */
export async function parseWalletAddress(raw: unknown): Promise<string | undefined> {
  if (typeof raw !== 'string' || !HEX_ADDRESS.test(raw)) return undefined;
  const digits = raw.slice(2);
  const mixed = digits !== digits.toLowerCase() && digits !== digits.toUpperCase();
  if (mixed && (await viem()).getAddress(raw) !== raw) return undefined;
  return raw.toLowerCase();
}

/** The EIP-55 spelling, as the SIWE message must carry it. */
export const checksummed = async (lower: string): Promise<`0x${string}`> => (await viem()).getAddress(lower);
