import { getAddress } from 'viem';

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * `0x` and 40 hex digits → the lower-case form we store and put in tokens; undefined otherwise. A
 * mixed-case spelling is an EIP-55 checksum and must be right (a typo in it is caught here rather than
 * signing in as a wallet nobody holds); all lower or all upper case carries no checksum.
 */
export function parseWalletAddress(raw: unknown): string | undefined {
  if (typeof raw !== 'string' || !HEX_ADDRESS.test(raw)) return undefined;
  const digits = raw.slice(2);
  const mixed = digits !== digits.toLowerCase() && digits !== digits.toUpperCase();
  if (mixed && getAddress(raw) !== raw) return undefined;
  return raw.toLowerCase();
}

/** The EIP-55 spelling, as the SIWE message must carry it. */
export const checksummed = (lower: string): `0x${string}` => getAddress(lower);
