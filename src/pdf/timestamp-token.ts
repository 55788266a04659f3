import { X509Certificate, constants, createHash, verify } from 'node:crypto';
import { childrenOf, contentOf, isOid, oid, readDer, TAG, timeOf, type Der } from './der.js';

/** An RFC 3161 TimeStampToken, read and checked. */
export type TimestampToken = {
  /** TSTInfo's genTime (ISO 8601): when the TSA says it stamped. */
  genTime: string | null;
  /** The digest the TSA stamped (messageImprint), and its algorithm as node:crypto names it. */
  imprint: Uint8Array;
  imprintAlgorithm: string | undefined;
  /** The TSA's signature over the TSTInfo verifies under a certificate the token carries, and its messageDigest matches. */
  verified: boolean;
  /** That certificate's subject common name (or whole subject). */
  tsaName: string | null;
  /** When that certificate expires (ISO 8601): the horizon of this timestamp's verifiability. */
  tsaCertificateExpires: string | null;
};

const OID_SIGNED_DATA = oid('1.2.840.113549.1.7.2');
const OID_TST_INFO = oid('1.2.840.113549.1.9.16.1.4');
const OID_MESSAGE_DIGEST = oid('1.2.840.113549.1.9.4');
const OID_RSA_PSS = oid('1.2.840.113549.1.1.10');
export const DIGESTS: [string, string][] = [
  [oid('2.16.840.1.101.3.4.2.1'), 'sha256'],
  [oid('2.16.840.1.101.3.4.2.2'), 'sha384'],
  [oid('2.16.840.1.101.3.4.2.3'), 'sha512'],
  [oid('1.3.14.3.2.26'), 'sha1'],
];
/** Tokens carry the TSA certificate and its chain: a handful. */
const MAX_CERTIFICATES = 8;
const MAX_ATTRIBUTES = 16;
/** A token is a few KB; one larger than this is not read. */
export const MAX_TOKEN_BYTES = 128 * 1024;

const digestOf = (buf: Uint8Array, algorithm: Der | undefined) => DIGESTS.find(([hex]) => isOid(buf, childrenOf(buf, algorithm, 2)?.[0], hex))?.[1];

/**
 * Reads a TimeStampToken (ContentInfo → SignedData whose content is a TSTInfo) by its lengths, as
 * seal-signature.ts reads a seal (der.ts), and checks it: the SignerInfo's messageDigest must be the
 * digest of the TSTInfo, and its signature over the signed attributes must verify under one of the
 * (at most eight) certificates the token carries. Whether that certificate is one to trust is the
 * reader's question (a PDF reader's trust list); this says only that the token is whole and whose it
 * is. Undefined: not a token of this shape.
 */
export function readTimestampToken(der: Uint8Array): TimestampToken | undefined {
  if (der.length > MAX_TOKEN_BYTES) return undefined;
  const root = readDer(der, 0);
  const [type, wrapped] = childrenOf(der, root, 2) ?? [];
  if (!isOid(der, type, OID_SIGNED_DATA)) return undefined;
  const parts = childrenOf(der, childrenOf(der, wrapped, 1)?.[0], 6);
  if (!parts || parts.length < 4) return undefined;
  const [eType, eWrapped] = childrenOf(der, parts[2], 2) ?? [];
  if (!isOid(der, eType, OID_TST_INFO)) return undefined;
  const eOctets = childrenOf(der, eWrapped, 1)?.[0];
  if (eOctets?.tag !== TAG.OCTET_STRING) return undefined;
  const tst = contentOf(der, eOctets);
  // TSTInfo { version, policy, messageImprint { algorithm, hashedMessage }, serialNumber, genTime, … }
  const info = childrenOf(tst, readDer(tst, 0), 12);
  if (!info || info.length < 5) return undefined;
  const [alg, hashed] = childrenOf(tst, info[2], 2) ?? [];
  const out: TimestampToken = {
    genTime: timeOf(tst, info[4]),
    imprint: contentOf(tst, hashed),
    imprintAlgorithm: digestOf(tst, alg),
    verified: false,
    tsaName: null,
    tsaCertificateExpires: null,
  };

  const certificates = parts.find((p) => p.tag === TAG.CONTEXT_0);
  const signerInfo = childrenOf(der, parts.at(-1), 1)?.[0];
  const si = childrenOf(der, signerInfo, 7);
  const at = si?.findIndex((p) => p.tag === TAG.CONTEXT_0) ?? -1;
  if (!si || at < 3 || si.length < at + 3) return out;
  const digest = digestOf(der, si[at - 1]);
  const attrs = childrenOf(der, si[at], MAX_ATTRIBUTES) ?? [];
  const md = attrs.map((a) => childrenOf(der, a, 2)).find((a) => isOid(der, a?.[0], OID_MESSAGE_DIGEST));
  const mdValue = childrenOf(der, md?.[1], 1)?.[0];
  if (!digest || mdValue?.tag !== TAG.OCTET_STRING) return out;
  if (!Buffer.from(contentOf(der, mdValue)).equals(createHash(digest).update(tst).digest())) return out;
  const signed = Buffer.from(der.subarray(si[at].at, si[at].end));
  signed[0] = TAG.SET;
  const signature = contentOf(der, si[at + 2]);
  const pss = isOid(der, childrenOf(der, si[at + 1], 2)?.[0], OID_RSA_PSS);
  for (const c of childrenOf(der, certificates, MAX_CERTIFICATES) ?? []) {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(der.subarray(c.at, c.end));
    } catch {
      continue;
    }
    let ok = false;
    try {
      ok = verify(digest, signed, pss ? { key: cert.publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO } : cert.publicKey, signature);
    } catch {
      ok = false;
    }
    if (!ok) continue;
    out.verified = true;
    out.tsaName = /(?:^|\n)CN=([^\n]+)/.exec(cert.subject)?.[1] ?? cert.subject.replace(/\n/g, ', ');
    out.tsaCertificateExpires = new Date(cert.validTo).toISOString();
    break;
  }
  return out;
}
