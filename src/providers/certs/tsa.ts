import { HttpTimestampAuthority, type DigestAlgorithm, type TimestampAuthority } from '@libpdf/core';
import { readTimestampToken } from '../../pdf/timestamp-token.js';
import { boundedFetchFn, redact } from './fetch-bounded.js';

/** A TSA's reply carries its token and certificate chain: a few KB; more is not a reply we want. */
const TSA_MAX_BYTES = 256 * 1024;

export type TsaOptions = { urls: readonly string[]; headers: Readonly<Record<string, string>>; timeoutMs: number };

const DIGEST_NAMES: Record<string, string> = { 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' };

/**
 * RFC 3161 timestamps from the configured TSAs, tried in order: the second only when the first fails,
 * times out or answers a token that does not verify or does not stamp what was asked. When all fail
 * this throws, so the seal fails and its job retries (never a seal without the timestamp asked for).
 * Errors name the TSAs by URL without credentials; the headers (basic auth, SIGNING_TSA_HEADER) are
 * never part of a message.
 */
export function createTimestampAuthority(o: TsaOptions, fetchFn?: typeof fetch): TimestampAuthority {
  const bounded = boundedFetchFn({ timeoutMs: o.timeoutMs, maxBytes: TSA_MAX_BYTES }, fetchFn);
  const authorities = o.urls.map((url) => ({ url, tsa: new HttpTimestampAuthority(url, { headers: { ...o.headers }, timeout: o.timeoutMs, fetch: bounded }) }));
  return {
    async timestamp(digest: Uint8Array, algorithm: DigestAlgorithm): Promise<Uint8Array> {
      const failures: string[] = [];
      for (const { url, tsa } of authorities) {
        try {
          const token = await tsa.timestamp(digest, algorithm);
          const read = readTimestampToken(token);
          if (!read?.verified) throw new Error('its token does not verify under the certificate it carries');
          if (read.imprintAlgorithm !== DIGEST_NAMES[algorithm] || !Buffer.from(read.imprint).equals(Buffer.from(digest))) throw new Error('its token stamps another value than the one sent');
          return token;
        } catch (err) {
          failures.push(`${redact(url)}: ${String((err as Error)?.message ?? err).slice(0, 200)}`);
        }
      }
      throw new Error(`No timestamp authority answered (${failures.join('; ')})`);
    },
  };
}
