import { z } from 'zod';
import { ConfigError } from './config-error.js';

/** PAdES conformance levels, weakest first. */
export const PADES_LEVELS = ['B-B', 'B-T', 'B-LT', 'B-LTA'] as const;
export type PadesLevel = (typeof PADES_LEVELS)[number];

const unsetIfEmpty = (v: unknown) => (v === '' ? undefined : v);
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(unsetIfEmpty, schema.optional());
const int = (min: number, max: number) => z.preprocess(unsetIfEmpty, z.coerce.number().int().min(min).max(max).optional());
const url = z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/+$/, ''));

/** The sealing variables, spread into config.ts's environment schema. */
export const SIGNING_ENV = {
  SIGNING_TSA_URL: optional(url),
  SIGNING_TSA_URL_2: optional(url),
  SIGNING_TSA_USERNAME: optional(z.string().min(1).max(500)),
  SIGNING_TSA_PASSWORD: optional(z.string().min(1).max(2000)),
  SIGNING_TSA_HEADER: optional(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+:\s*\S.*$/, 'must be "Name: value"').max(4000)),
  SIGNING_TSA_TIMEOUT_MS: int(100, 120_000).default(10_000),
  SIGNING_PADES_LEVEL: optional(z.enum(PADES_LEVELS)),
  SIGNING_REVOCATION_TIMEOUT_MS: int(100, 120_000).default(10_000),
  SIGNING_ARCHIVE_RETIMESTAMP_DAYS: int(1, 3650),
};

type SigningEnv = z.infer<z.ZodObject<typeof SIGNING_ENV>>;

export type TsaConfig = Readonly<{
  /** Tried in order: the second only when the first fails or times out. */
  urls: readonly string[];
  /** Sent with every TSA request (basic auth or SIGNING_TSA_HEADER). Secret: never logged. */
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
  /** The first TSA's host: how the certificate page names the timestamp authority. */
  name: string;
}>;

export type SigningConfig = Readonly<{
  /** The level every seal is made at (a chain with no revocation information is sealed B-T under B-LT/B-LTA). */
  level: PadesLevel;
  tsa: TsaConfig | undefined;
  /** Bound on each OCSP, CRL or certificate fetch at sealing (B-LT, B-LTA). */
  revocationTimeoutMs: number;
  /** Archival: re-timestamp sealed documents whose latest timestamp's TSA certificate expires within this many days; undefined: off. */
  archiveRetimestampDays: number | undefined;
}>;

export function signingConfig(e: SigningEnv): SigningConfig {
  const urls = [e.SIGNING_TSA_URL, e.SIGNING_TSA_URL_2].filter((u): u is string => u !== undefined);
  if (e.SIGNING_TSA_URL_2 !== undefined && e.SIGNING_TSA_URL === undefined) throw new ConfigError('Invalid configuration: SIGNING_TSA_URL_2: requires SIGNING_TSA_URL (the second TSA is tried when the first fails)');
  if ((e.SIGNING_TSA_USERNAME === undefined) !== (e.SIGNING_TSA_PASSWORD === undefined)) {
    throw new ConfigError(`Invalid configuration: ${e.SIGNING_TSA_USERNAME === undefined ? 'SIGNING_TSA_USERNAME' : 'SIGNING_TSA_PASSWORD'}: set both SIGNING_TSA_USERNAME and SIGNING_TSA_PASSWORD, or neither`);
  }
  if (e.SIGNING_TSA_USERNAME !== undefined && e.SIGNING_TSA_HEADER !== undefined) throw new ConfigError('Invalid configuration: SIGNING_TSA_HEADER: set either it or SIGNING_TSA_USERNAME/SIGNING_TSA_PASSWORD, not both');
  const orphan = (['SIGNING_TSA_USERNAME', 'SIGNING_TSA_HEADER'] as const).find((k) => e[k] !== undefined);
  if (!urls.length && orphan) throw new ConfigError(`Invalid configuration: ${orphan}: requires SIGNING_TSA_URL`);
  const level = e.SIGNING_PADES_LEVEL ?? (urls.length ? 'B-T' : 'B-B');
  if (level !== 'B-B' && !urls.length) {
    throw new ConfigError(`Invalid configuration: SIGNING_PADES_LEVEL: ${level} needs a timestamp authority: set SIGNING_TSA_URL (an RFC 3161 TSA), or choose B-B`);
  }
  if (e.SIGNING_ARCHIVE_RETIMESTAMP_DAYS !== undefined && !urls.length) throw new ConfigError('Invalid configuration: SIGNING_ARCHIVE_RETIMESTAMP_DAYS: requires SIGNING_TSA_URL (a re-timestamp is a new RFC 3161 timestamp)');
  const headers: Record<string, string> = {};
  if (e.SIGNING_TSA_USERNAME !== undefined) headers.authorization = `Basic ${Buffer.from(`${e.SIGNING_TSA_USERNAME}:${e.SIGNING_TSA_PASSWORD}`).toString('base64')}`;
  if (e.SIGNING_TSA_HEADER !== undefined) {
    const at = e.SIGNING_TSA_HEADER.indexOf(':');
    headers[e.SIGNING_TSA_HEADER.slice(0, at).trim().toLowerCase()] = e.SIGNING_TSA_HEADER.slice(at + 1).trim();
  }
  const tsa = urls.length ? Object.freeze({ urls: Object.freeze(urls), headers: Object.freeze(headers), timeoutMs: e.SIGNING_TSA_TIMEOUT_MS, name: new URL(urls[0]).host }) : undefined;
  return Object.freeze({ level, tsa, revocationTimeoutMs: e.SIGNING_REVOCATION_TIMEOUT_MS, archiveRetimestampDays: e.SIGNING_ARCHIVE_RETIMESTAMP_DAYS });
}
