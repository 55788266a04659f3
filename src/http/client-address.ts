import { isIPv4, isIPv6 } from 'node:net';
import type { FastifyServerOptions } from 'fastify';
import type { TrustProxy } from '../config-proxy.js';
import { ipv6Number } from '../lib/ip.js';

/**
 * Fastify's `trustProxy` for TRUST_PROXY. Addresses go to Fastify as they are: a hop is trusted only
 * when it comes from one of them, so a client that reaches a node directly cannot name its own
 * address. A hop count trusts the nearest hops whatever their address (Fastify no longer takes a bare
 * number for that reason); it is safe only where the nodes are reachable through the proxies alone.
 */
export function trustProxyOption(trust: TrustProxy): FastifyServerOptions['trustProxy'] {
  if (trust === false) return false;
  if (typeof trust === 'number') return (_address: string, hop: number) => hop < trust;
  return [...trust];
}

/**
 * The key every per-IP limit counts by (the rate limit, failed authentication, sign-in links, OpenID
 * Connect starts). An IPv4 address is one client. An IPv6 client is usually given a whole /64 (and
 * often more), so it can change addresses at will inside it: it counts as its /64. An IPv4-mapped
 * IPv6 address (a dual-stack socket's ::ffff:192.0.2.1) is its IPv4 address.
 */
export function ipBucket(ip: string): string {
  // Undefined at run time once the socket is gone: one key for all such, as before.
  if (typeof ip !== 'string' || isIPv4(ip)) return `${ip}`;
  const bare = ip.split('%')[0];
  if (!isIPv6(bare)) return ip;
  const n = ipv6Number(bare);
  if (n >> 32n === 0xffffn) return [24n, 16n, 8n, 0n].map((shift) => (n >> shift) & 0xffn).join('.');
  const groups = [112n, 96n, 80n, 64n].map((shift) => ((n >> shift) & 0xffffn).toString(16));
  return `${groups.join(':')}::/64`;
}
