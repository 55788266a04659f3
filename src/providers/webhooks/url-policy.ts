import { lookup } from 'node:dns/promises';
import { isIP, isIPv4, isIPv6 } from 'node:net';
import { AppError } from '../../errors.js';
import { within } from '../../lib/deadline.js';
import { ipv4Number as v4, ipv6Number as v6 } from '../../lib/ip.js';

/**
 * Which webhook URLs Signet will call. A webhook URL is chosen by a customer, so without this policy
 * the delivery worker would be a request forgery tool aimed at the operator's own network (cloud
 * metadata at 169.254.169.254, databases on 10/8, the service itself). The rule is an allow-list:
 * only public unicast addresses pass, checked on the URL's literal host and on every address its name
 * resolves to, at registration and again right before each connection.
 */

export type ResolvedAddress = { address: string; family: 4 | 6 };
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver, in its own order (`verbatim`), every address (`all`): each one is checked. */
export const systemResolver: Resolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** A DNS failure, as opposed to a policy refusal: the sender reports it as a connection error. */
export class WebhookDnsError extends AppError {
  constructor(message: string) {
    super('INVALID_WEBHOOK_URL', message);
  }
}

// ---------------------------------------------------------------------------------------------
// Addresses

type Cidr4 = readonly [base: number, bits: number];

/** IPv4 special-purpose ranges (IANA registry, RFC 6890) that no webhook receiver may live in. */
const DENIED_V4: readonly Cidr4[] = (
  [
    ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host on Linux
    ['10.0.0.0', 8], // RFC 1918
    ['100.64.0.0', 10], // carrier-grade NAT
    ['127.0.0.0', 8], // loopback
    ['169.254.0.0', 16], // link-local, including cloud metadata 169.254.169.254
    ['172.16.0.0', 12], // RFC 1918
    ['192.0.0.0', 24], // IETF protocol assignments
    ['192.0.2.0', 24], // TEST-NET-1
    ['192.88.99.0', 24], // deprecated 6to4 relay anycast
    ['192.168.0.0', 16], // RFC 1918
    ['198.18.0.0', 15], // benchmarking
    ['198.51.100.0', 24], // TEST-NET-2
    ['203.0.113.0', 24], // TEST-NET-3
    ['224.0.0.0', 4], // multicast
    ['240.0.0.0', 4], // reserved, including broadcast 255.255.255.255
  ] as const
).map(([a, bits]) => [v4(a), bits] as const);

const inCidr4 = (ip: number, [base, bits]: Cidr4) => {
  const size = 2 ** (32 - bits);
  return Math.floor(ip / size) === Math.floor(base / size);
};

const inCidr6 = (ip: bigint, base: string, bits: number) => ip >> BigInt(128 - bits) === v6(base) >> BigInt(128 - bits);

/**
 * IPv6 is checked by allow-list: only 2000::/3 is global unicast. That alone refuses ::, ::1, the
 * IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96) and IPv4-translated forms, NAT64 64:ff9b::/96
 * and 64:ff9b:1::/48, discard 100::/64, ULA fc00::/7, link-local fe80::/10, site-local fec0::/10 and
 * multicast ff00::/8. Inside 2000::/3, the ranges below are special-purpose; the tunnelling ones embed
 * an IPv4 address that may be private, and are refused whole rather than decoded (6to4 is deprecated
 * by RFC 7526 and Teredo is never a server address).
 */
const DENIED_V6: readonly (readonly [string, number])[] = [
  ['2001::', 23], // IETF protocol assignments, including Teredo 2001::/32 and benchmarking 2001:2::/48
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4
  ['3fff::', 20], // documentation (RFC 9637)
];

/** True only for a global unicast IP address; anything else (including a non-address) is false. */
export function isPublicUnicast(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (isIPv4(bare)) {
    const ip = v4(bare);
    return !DENIED_V4.some((c) => inCidr4(ip, c));
  }
  // A zone id (fe80::1%eth0) only ever qualifies a non-global address; judge the address itself.
  const noZone = bare.split('%')[0];
  if (!isIPv6(noZone)) return false;
  const ip = v6(noZone);
  if (!inCidr6(ip, '2000::', 3)) return false;
  return !DENIED_V6.some(([base, bits]) => inCidr6(ip, base, bits));
}

// ---------------------------------------------------------------------------------------------
// URLs

/** The form hosts are compared in: lower case, no brackets, no trailing root dot, canonical IPv6. */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (isIPv6(h)) return new URL(`http://[${h}]/`).hostname.slice(1, -1);
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

/**
 * Names that only ever mean something inside the operator's network. Single-label names are
 * completed by the server's DNS search domain, which is the operator's internal zone.
 */
function isLocalName(host: string): boolean {
  return (
    !host.includes('.') ||
    host === 'localhost' ||
    ['.localhost', '.local', '.internal', '.localdomain', '.home.arpa'].some((suffix) => host.endsWith(suffix))
  );
}

const defaultPort = (protocol: string) => (protocol === 'https:' ? '443' : '80');

export type UrlPolicy = { allowHosts: readonly string[]; ownOrigins: readonly string[] };

const refuse = (message: string): never => {
  throw new AppError('INVALID_WEBHOOK_URL', message);
};

/** A local receiver is what a developer tries first: say how the operator lets one through. */
const refuseLocal = (host: string, why: string): never =>
  refuse(`The webhook host ${host} ${why}; for local development, the operator can allow it with WEBHOOK_ALLOW_HOSTS=${host}`);

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * Validates a webhook URL without touching the network. The WHATWG parser has already turned every
 * IPv4 spelling (2130706433, 0x7f.1, 0177.0.0.1, 127.1, full-width digits, percent-escapes) into
 * dotted decimal and every IPv6 literal into its canonical form, so checks here see one spelling.
 * `literalAddress` is set when the host is an IP address (there is then nothing to resolve).
 */
export function parseWebhookUrl(raw: string, opts: UrlPolicy): { url: URL; literalAddress?: string } {
  if (typeof raw !== 'string' || raw.length === 0) refuse('The webhook URL is empty');
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) refuse(`The webhook URL is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('The webhook URL is not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') refuse('The webhook URL must use http or https');
  if (url.username || url.password) refuse('The webhook URL must not contain credentials (user:password@)');
  const host = normalizeHost(url.hostname);
  if (!host) refuse('The webhook URL has no host');

  // Compared by host and effective port, whatever the scheme: http://own:443 is still this service.
  const port = url.port || defaultPort(url.protocol);
  for (const own of opts.ownOrigins) {
    let o: URL;
    try {
      o = new URL(own);
    } catch {
      continue;
    }
    if (normalizeHost(o.hostname) === host && (o.port || defaultPort(o.protocol)) === port) {
      refuse("The webhook URL points at this service's own origin");
    }
  }

  const literal = isIP(host) ? host : undefined;
  if (isAllowListed(host, opts.allowHosts)) return literal ? { url, literalAddress: literal } : { url };
  if (literal) {
    if (!isPublicUnicast(literal)) refuseLocal(url.hostname, 'is not a public address');
    return { url, literalAddress: literal };
  }
  if (isLocalName(host)) refuseLocal(url.hostname, 'is a local-network name');
  return { url };
}

export function isAllowListed(host: string, allowHosts: readonly string[]): boolean {
  const h = normalizeHost(host);
  return allowHosts.some((a) => normalizeHost(a) === h);
}

/**
 * Resolves the URL's host once and checks every answer: one private address among public ones is
 * enough to refuse, because the connecting side could pick any of them. Returns the address to dial
 * (the first answer), so the caller connects to exactly what was checked and DNS cannot change in
 * between. Allow-listed hosts are resolved but not checked.
 */
export async function checkResolvable(
  url: URL,
  opts: { allowHosts: readonly string[]; resolver?: Resolver; timeoutMs?: number },
): Promise<ResolvedAddress> {
  const host = normalizeHost(url.hostname);
  const allowed = isAllowListed(host, opts.allowHosts);
  if (isIP(host)) {
    if (!allowed && !isPublicUnicast(host)) refuseLocal(url.hostname, 'is not a public address');
    return { address: host, family: isIPv6(host) ? 6 : 4 };
  }
  const answers = await resolveWithin(host, opts.resolver ?? systemResolver, opts.timeoutMs ?? 5_000);
  if (answers.length === 0) throw new WebhookDnsError(`The webhook host ${host} does not resolve to any address`);
  if (!allowed) {
    const bad = answers.find((a) => !isPublicUnicast(a.address));
    if (bad) refuseLocal(host, `resolves to ${bad.address}, which is not a public address`);
  }
  const first = answers[0];
  return { address: first.address, family: isIPv6(first.address) ? 6 : 4 };
}

async function resolveWithin(host: string, resolver: Resolver, timeoutMs: number): Promise<ResolvedAddress[]> {
  try {
    return await within(resolver(host), timeoutMs, () => new WebhookDnsError(`Resolving ${host} took longer than ${timeoutMs} ms`));
  } catch (err) {
    if (err instanceof AppError) throw err;
    const code = (err as NodeJS.ErrnoException)?.code;
    throw new WebhookDnsError(`The webhook host ${host} could not be resolved${code ? ` (${code})` : ''}`);
  }
}
