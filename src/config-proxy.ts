import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Whose X-Forwarded-For (the client's address), -Proto and -Host are believed: nobody (`false`), the
 * proxies at these addresses or networks, or the nearest `n` hops whatever their address.
 */
export type TrustProxy = false | number | readonly string[];

/** Named ranges Fastify (proxy-addr) knows. */
const RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];
const MAX_HOPS = 16;

function validEntry(entry: string): boolean {
  if (RANGE_NAMES.includes(entry)) return true;
  const [address, bits, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) >= 1 && Number(bits) <= (family === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY → TrustProxy; throws with the reason. `true` is refused rather than kept: it believes
 * every X-Forwarded-For entry, and the left-most one is whatever the client wrote, so the client
 * would choose the address on its sealed certificate and in every per-IP limit.
 */
export function parseTrustProxy(text: string | undefined): TrustProxy {
  const value = text?.trim().toLowerCase();
  if (value === undefined || value === '' || value === 'false' || value === '0') return false;
  if (value === 'true') {
    throw new Error(
      'true is no longer accepted: it believes the left-most X-Forwarded-For entry, which the client writes. Name the proxies (their addresses or CIDRs, e.g. 10.0.0.5 or 10.0.0.0/8) or give the number of proxies in front of the nodes',
    );
  }
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > MAX_HOPS) throw new Error(`a hop count must be 1 to ${MAX_HOPS}`);
    return hops;
  }
  const entries = value.split(',').map((e) => e.trim());
  const bad = entries.findIndex((e) => !validEntry(e));
  if (bad !== -1) throw new Error(`entry ${bad + 1} is not an IP address, a CIDR (10.0.0.0/8, fd00::/8), loopback, linklocal or uniquelocal`);
  return Object.freeze(entries);
}

/** TRUST_PROXY in config.ts's environment schema. */
export const ZTrustProxy = z
  .string()
  .optional()
  .transform((v, ctx) => {
    try {
      return parseTrustProxy(v);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });
