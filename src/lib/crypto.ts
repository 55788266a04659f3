import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const sha256Hex = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

export const randomHex = (bytes: number): string => randomBytes(bytes).toString('hex');

/** Constant-time string equality; hashing first makes the comparison independent of both lengths. */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
