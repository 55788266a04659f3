import { createHash } from 'node:crypto';
import type { PadesLevel } from '../config-signing.js';
import type { SealSignatureCheck } from './seal-signature.js';
import { readDer } from './der.js';
import { findSignedRanges, signatureContents, signedDigest, type SignedRange } from './signed-revisions.js';
import { readTimestampToken, type TimestampToken } from './timestamp-token.js';

/** What a seal of ours proves beyond "this server signed it": when, by whose clock, and for how long it stays checkable. */
export type SealEvidence = {
  /** The PAdES level the file shows: B-T needs a verified signature timestamp over our signature, B-LT revocation data in a DSS, B-LTA a verified document timestamp after it. */
  level: PadesLevel;
  /** The TSA's genTime when the timestamp verifies and stamps our signature; else the signing time the signature claims (the server's clock). */
  signatureTime: string | null;
  timeSource: 'TSA' | 'SIGNER_CLOCK';
  timestamp: { time: string | null; tsa: string | null; verified: boolean; matchesSignature: boolean } | null;
  /** The Document Security Store: the certificates, OCSP responses and CRLs embedded for long-term validation. */
  dss: { certificates: number; ocspResponses: number; crls: number } | null;
  /** Document timestamps after the seal (archival), latest first. */
  documentTimestamps: { time: string | null; tsa: string | null; verified: boolean; tsaCertificateExpires: string | null }[];
};

/** More than an archive would add in decades; later ones are not read. */
const MAX_DOCUMENT_TIMESTAMPS = 4;
/** A DSS dictionary and its arrays are a few hundred bytes each: read no further. */
const DSS_WINDOW = 64 * 1024;

/**
 * The evidence around our signature, read from the bytes up to `knownEnd` (the part of the file the
 * caller recognises as one this server wrote; what was appended after it is anyone's): its timestamp token (readTimestampToken:
 * whole, signed by the certificate it carries, stamping SHA-x of our signature value), the DSS
 * (found by text: the dictionary @libpdf/core writes; one inside a compressed object stream is not
 * read and counts as absent) and the document timestamps signed after ours. Every read is bounded:
 * the tokens by MAX_TOKEN_BYTES, the DSS by a window, the document timestamps by count.
 */
export function sealEvidence(bytes: Uint8Array, ours: { range: SignedRange; check: SealSignatureCheck }, ranges: SignedRange[], knownEnd = bytes.length): SealEvidence {
  const token = ours.check.timestampToken && readTimestampToken(ours.check.timestampToken);
  const matchesSignature = !!token?.imprintAlgorithm && Buffer.from(token.imprint).equals(createHash(token.imprintAlgorithm).update(ours.check.signatureValue).digest());
  const trustedTime = token?.verified && matchesSignature;
  const documentTimestamps = ranges
    .filter((r) => r.end > ours.range.end && r.end <= knownEnd)
    .slice(0, MAX_DOCUMENT_TIMESTAMPS)
    .map((r) => documentTimestamp(bytes, r))
    .filter((t) => t !== undefined);
  const dss = readDss(bytes, ours.range.end, knownEnd);
  let level: PadesLevel = 'B-B';
  if (trustedTime) level = 'B-T';
  if (level === 'B-T' && dss && dss.ocspResponses + dss.crls > 0) level = 'B-LT';
  if (level === 'B-LT' && documentTimestamps.some((t) => t.verified)) level = 'B-LTA';
  return {
    level,
    signatureTime: trustedTime ? token.genTime : ours.check.signedAt,
    timeSource: trustedTime ? 'TSA' : 'SIGNER_CLOCK',
    timestamp: token ? { time: token.genTime, tsa: token.tsaName, verified: token.verified, matchesSignature } : null,
    dss,
    documentTimestamps,
  };
}

/** A /DocTimeStamp: its /Contents is a token stamping the digest of the bytes it covers. */
function documentTimestamp(bytes: Uint8Array, range: SignedRange): SealEvidence['documentTimestamps'][number] | undefined {
  const der = signatureContents(bytes, range);
  // The placeholder is zero-padded past the token.
  const end = der && der.length > 4 && der[0] === 0x30 && der[1] === 0x82 ? 4 + der.readUInt16BE(2) : der && der.length > 5 && der[0] === 0x30 && der[1] === 0x83 ? 5 + der.readUIntBE(2, 3) : undefined;
  const token: TimestampToken | undefined = der && end ? readTimestampToken(der.subarray(0, end)) : undefined;
  if (!token) return undefined;
  // Only now, for a token that reads as one, is the (large) covered range hashed.
  const stamps = !!token.imprintAlgorithm && Buffer.from(token.imprint).equals(signedDigest(bytes, range, token.imprintAlgorithm));
  return { time: token.genTime, tsa: token.tsaName, verified: token.verified && stamps, tsaCertificateExpires: token.tsaCertificateExpires };
}

/** The latest DSS written after `from` (the seal's revision) and before `to`: how many certificates, OCSP responses and CRLs it lists. */
export function readDss(bytes: Uint8Array, from: number, to = bytes.length): SealEvidence['dss'] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).subarray(0, to);
  const at = buf.lastIndexOf('/Type /DSS');
  if (at < from) return null;
  const dict = buf.toString('latin1', at, Math.min(buf.length, at + DSS_WINDOW));
  const body = dict.slice(0, Math.max(0, dict.indexOf('endobj')) || dict.length);
  const count = (name: string): number => {
    const direct = new RegExp(`/${name}\\s*\\[([^\\]]*)\\]`).exec(body);
    if (direct) return (direct[1].match(/\d+\s+\d+\s+R/g) ?? []).length;
    const indirect = new RegExp(`/${name}\\s+(\\d+)\\s+(\\d+)\\s+R`).exec(body);
    if (!indirect) return 0;
    const obj = buf.lastIndexOf(`${indirect[1]} ${indirect[2]} obj`);
    if (obj < 0) return 0;
    const text = buf.toString('latin1', obj, Math.min(buf.length, obj + DSS_WINDOW));
    const arr = /obj\s*\[([^\]]*)\]/.exec(text);
    return arr ? (arr[1].match(/\d+\s+\d+\s+R/g) ?? []).length : 0;
  };
  return { certificates: count('Certs'), ocspResponses: count('OCSPs'), crls: count('CRLs') };
}

/** The signature-time-stamp attribute's OID as DER (06 0B …): found in a CMS of ours by a byte search. */
const SIGNATURE_TIMESTAMP_OID = Buffer.from('060b2a864886f70d010910020e', 'hex');

/**
 * When the latest timestamp in a sealed file of ours stops being checkable: the expiry of its TSA's
 * certificate (the latest verified document timestamp's, else the seal's signature timestamp's).
 * Null when the file has no timestamp. For files this server wrote (the seal and archival jobs), not uploads.
 */
export function timestampHorizon(bytes: Uint8Array): Date | null {
  for (const range of findSignedRanges(bytes)) {
    const doc = documentTimestamp(bytes, range);
    if (doc) {
      if (doc.verified && doc.tsaCertificateExpires) return new Date(doc.tsaCertificateExpires);
      continue;
    }
    const cms = signatureContents(bytes, range);
    const at = cms ? cms.indexOf(SIGNATURE_TIMESTAMP_OID) : -1;
    if (!cms || at < 0) continue;
    // Attribute { OID, SET { token } }: the SET follows the OID, the token is its first element.
    const set = readDer(cms, at + SIGNATURE_TIMESTAMP_OID.length);
    const first = set && readDer(cms, set.start, set.end);
    const token = first && readTimestampToken(cms.subarray(first.at, first.end));
    if (token?.verified && token.tsaCertificateExpires) return new Date(token.tsaCertificateExpires);
  }
  return null;
}
