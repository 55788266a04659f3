import { createHash } from 'node:crypto';

/**
 * The signatures a PDF carries, found without parsing it (DESIGN convention 15: these are untrusted
 * bytes, read on the request's thread). Nothing is decoded: a bounded scan from the end of the file
 * for `/ByteRange [0 b c d]`, whose four integers are checked against the file before they are used,
 * and later the hex string between b and c (the signature itself, a bounded size).
 */

/** One signature as its /ByteRange places it: it signs [0, contentsStart) and [contentsEnd, end). */
export type SignedRange = {
  /** The '<' that opens the signature's /Contents hex string. */
  contentsStart: number;
  /** Just past the '>' that closes it. */
  contentsEnd: number;
  /** The end of the revision it signs: bytes [0, end) are that revision as it was saved. */
  end: number;
};

/** At most this many signatures are looked at, the last ones first; a sealed file has one of ours, last. */
export const MAX_SIGNATURES = 8;
/** `/ByteRange` occurrences examined at most, valid or not (a file full of decoys costs a bounded scan). */
const MAX_CANDIDATES = 64;
/** A signature's hex string: ours is about 25 KB (64 KB with a timestamp); anything far larger is not ours. */
export const MAX_CONTENTS_HEX = 512 * 1024;
/** Readers accept the header anywhere in the first KiB (some producers put junk before it). */
const HEADER_WINDOW = 1024;

const KEY = Buffer.from('/ByteRange');
const RANGE = /^\s*\[\s*(\d{1,12})\s+(\d{1,12})\s+(\d{1,12})\s+(\d{1,12})\s*\]/;

const view = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** `%PDF-` in the first KiB: the one check before anything else is looked at. */
export function hasPdfHeader(bytes: Uint8Array): boolean {
  const at = view(bytes).indexOf('%PDF-');
  return at !== -1 && at <= HEADER_WINDOW;
}

/** The file's signatures, last first, each range consistent with the file; at most MAX_SIGNATURES. */
export function findSignedRanges(bytes: Uint8Array): SignedRange[] {
  const buf = view(bytes);
  const found: SignedRange[] = [];
  let from = buf.length;
  for (let examined = 0; examined < MAX_CANDIDATES && found.length < MAX_SIGNATURES && from > 0; examined++) {
    const at = buf.lastIndexOf(KEY, from - 1);
    if (at === -1) break;
    from = at;
    const m = RANGE.exec(buf.toString('latin1', at + KEY.length, Math.min(buf.length, at + KEY.length + 96)));
    if (!m) continue;
    const [a, b, c, d] = m.slice(1).map(Number);
    const range = { contentsStart: b, contentsEnd: c, end: c + d };
    const consistent = a === 0 && b > 0 && c > b + 1 && c - b <= MAX_CONTENTS_HEX + 2 && c + d <= buf.length && buf[b] === 0x3c && buf[c - 1] === 0x3e;
    if (consistent && !found.some((f) => f.contentsStart === b && f.end === range.end)) found.push(range);
  }
  return found;
}

/**
 * SHA-256 (hex) of the whole file and of every prefix [0, end) named in `ends`, in one pass over the
 * bytes: a revision of a file is exactly such a prefix (an incremental update only appends).
 */
export function prefixHashes(bytes: Uint8Array, ends: number[]): { whole: string; prefixes: Map<number, string> } {
  const buf = view(bytes);
  const hash = createHash('sha256');
  const prefixes = new Map<number, string>();
  let at = 0;
  for (const end of [...new Set(ends)].filter((e) => e > 0 && e < buf.length).sort((x, y) => x - y)) {
    hash.update(buf.subarray(at, end));
    at = end;
    prefixes.set(end, hash.copy().digest('hex'));
  }
  hash.update(buf.subarray(at));
  return { whole: hash.digest('hex'), prefixes };
}

/** The signature's DER bytes: the hex between '<' and '>', without the zero padding a placeholder leaves. */
export function signatureContents(bytes: Uint8Array, range: SignedRange): Buffer | undefined {
  const hex = view(bytes).toString('latin1', range.contentsStart + 1, range.contentsEnd - 1);
  if (!/^[0-9A-Fa-f]*$/.test(hex) || hex.length % 2 !== 0) return undefined;
  return Buffer.from(hex, 'hex');
}

/** The digest of what a signature covers: the revision without its /Contents string. */
export function signedDigest(bytes: Uint8Array, range: SignedRange, algorithm: string): Buffer {
  const buf = view(bytes);
  return createHash(algorithm).update(buf.subarray(0, range.contentsStart)).update(buf.subarray(range.contentsEnd, range.end)).digest();
}

/**
 * SHA-256 (hex) of what a signature covers (the revision but its /Contents): the record that names a
 * sealed file's envelope even when bytes its signature does not cover (the CMS's certificates) differ.
 */
export const signedContentSha256 = (bytes: Uint8Array, range: SignedRange): string => signedDigest(bytes, range, 'sha256').toString('hex');
