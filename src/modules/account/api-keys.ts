import { randomHex, sha256Hex } from '../../lib/crypto.js';

export type NewApiKey = { key: string; keyHash: string; prefix: string };

/** `svc_live_<32 hex>` / `svc_test_<32 hex>`: 128 random bits. Only the hash and a display prefix are kept. */
export function generateApiKey(mode: 'live' | 'test'): NewApiKey {
  const key = `svc_${mode}_${randomHex(16)}`;
  return { key, keyHash: sha256Hex(key), prefix: displayPrefix(key) };
}

export const displayPrefix = (key: string): string => key.slice(0, 'svc_live_'.length + 8);
