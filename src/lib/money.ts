/** Money is integer micros (USD 1 = 1,000,000); cents and strings exist only at the edges. */
export const MICROS_PER_CENT = 10_000n;

export const centsToMicros = (cents: number | bigint): bigint => BigInt(cents) * MICROS_PER_CENT;

/** Whole cents, rounded down: a balance never shows more than it holds. */
export const microsToCents = (micros: bigint): number => Number(micros / MICROS_PER_CENT);

/** "0.10", "5.00", "0.000001": at least two decimals, more only when the micros need them. */
export function formatUsd(micros: bigint): string {
  const negative = micros < 0n;
  const abs = negative ? -micros : micros;
  const whole = abs / 1_000_000n;
  let frac = (abs % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  if (frac.length < 2) frac = frac.padEnd(2, '0');
  return `${negative ? '-' : ''}${whole}.${frac}`;
}

export const formatDollars = (micros: bigint): string => `$${formatUsd(micros)}`;
