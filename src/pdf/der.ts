/**
 * Just enough DER to walk a CMS signature by its lengths: an element's tag and where its content
 * lies, and the first few children of a constructed one. Nothing is decoded that is not asked for,
 * so the cost is the number of headers read, never the size of what they enclose (a signature's
 * certificates, or a crafted /Contents of a quarter million empty elements, are skipped unread).
 */

/** One element of `buf`: `tag` its identifier octet; its whole encoding is [at, end), its content [start, end). */
export type Der = { tag: number; at: number; start: number; end: number };

export const TAG = { INTEGER: 0x02, OCTET_STRING: 0x04, OID: 0x06, UTC_TIME: 0x17, GENERALIZED_TIME: 0x18, SEQUENCE: 0x30, SET: 0x31, CONTEXT_0: 0xa0, CONTEXT_1: 0xa1 } as const;

/** The element at `at`, which must end by `limit`; undefined when its header or length does not fit. */
export function readDer(buf: Uint8Array, at: number, limit = buf.length): Der | undefined {
  if (at + 2 > limit) return undefined;
  const tag = buf[at];
  // Multi-octet tags never occur in what we read.
  if ((tag & 0x1f) === 0x1f) return undefined;
  let length = buf[at + 1];
  let start = at + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 4 || start + octets > limit) return undefined;
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + buf[start++];
  }
  if (start + length > limit) return undefined;
  return { tag, at, start, end: start + length };
}

/**
 * The children of a constructed element, or undefined when it is not constructed, a child does not
 * fit, or it has more than `max` children (a shape that is not the one expected: not read further).
 */
export function childrenOf(buf: Uint8Array, parent: Der | undefined, max: number): Der[] | undefined {
  if (!parent || !(parent.tag & 0x20)) return undefined;
  const out: Der[] = [];
  for (let at = parent.start; at < parent.end; ) {
    if (out.length === max) return undefined;
    const child = readDer(buf, at, parent.end);
    if (!child) return undefined;
    out.push(child);
    at = child.end;
  }
  return out;
}

export const contentOf = (buf: Uint8Array, d: Der | undefined): Uint8Array => (d ? buf.subarray(d.start, d.end) : new Uint8Array(0));

/** The content octets of an OBJECT IDENTIFIER, encoded from its dotted form (to compare with what is read). */
export function oid(dotted: string): string {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const out: number[] = [];
  for (const n of [a * 40 + b, ...rest]) {
    const groups = [n & 0x7f];
    for (let v = Math.floor(n / 128); v > 0; v = Math.floor(v / 128)) groups.unshift((v & 0x7f) | 0x80);
    out.push(...groups);
  }
  return Buffer.from(out).toString('hex');
}

/** Whether `d` is an OBJECT IDENTIFIER with these content octets (from `oid`). */
export const isOid = (buf: Uint8Array, d: Der | undefined, hex: string): boolean => d?.tag === TAG.OID && Buffer.from(contentOf(buf, d)).toString('hex') === hex;

/** A UTCTime or GeneralizedTime as ISO 8601 (UTC), or null when it is not one we can read. */
export function timeOf(buf: Uint8Array, d: Der | undefined): string | null {
  if (!d || (d.tag !== TAG.UTC_TIME && d.tag !== TAG.GENERALIZED_TIME)) return null;
  const text = Buffer.from(contentOf(buf, d)).toString('latin1');
  const m = (d.tag === TAG.UTC_TIME ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/ : /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:\.\d+)?Z$/).exec(text);
  if (!m) return null;
  const year = d.tag === TAG.UTC_TIME ? (Number(m[1]) < 50 ? 2000 : 1900) + Number(m[1]) : Number(m[1]);
  const time = Date.UTC(year, Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return Number.isNaN(time) ? null : new Date(time).toISOString();
}
