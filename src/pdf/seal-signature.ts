import { X509Certificate, constants, verify, type KeyObject } from 'node:crypto';
import { childrenOf, contentOf, isOid, oid, readDer, TAG, timeOf, type Der } from './der.js';
import { signatureContents, signedDigest, type SignedRange } from './signed-revisions.js';

/** A signature that verifies under the sealing certificate's key: this server made it. */
export type SealSignatureCheck = {
  /** The bytes it covers still hash to the digest it signed. */
  intact: boolean;
  /** Its signingTime attribute, when it has one. */
  signedAt: string | null;
  /** The SignerInfo's signature value: what an RFC 3161 signature timestamp stamps the digest of. */
  signatureValue: Uint8Array;
  /** Its signature-time-stamp token (unsigned attribute), when it has one. */
  timestampToken: Uint8Array | undefined;
};

const OID_SIGNATURE_TIMESTAMP = oid('1.2.840.113549.1.9.16.2.14');
/** Ours carry one (the signature timestamp). */
const MAX_UNSIGNED_ATTRIBUTES = 4;

const OID_SIGNED_DATA = oid('1.2.840.113549.1.7.2');
const OID_MESSAGE_DIGEST = oid('1.2.840.113549.1.9.4');
const OID_SIGNING_TIME = oid('1.2.840.113549.1.9.5');
const OID_RSA_PSS = oid('1.2.840.113549.1.1.10');
const DIGESTS: [string, string][] = [
  [oid('2.16.840.1.101.3.4.2.1'), 'sha256'],
  [oid('2.16.840.1.101.3.4.2.2'), 'sha384'],
  [oid('2.16.840.1.101.3.4.2.3'), 'sha512'],
];
const MAX_SIGNER_INFOS = 4;
/** Ours carry four or five (content type, signing time, message digest, signing certificate, algorithm protection). */
const MAX_SIGNED_ATTRIBUTES = 16;

/**
 * Checks a PAdES (CMS, detached) signature against the sealing certificate. @libpdf/core 0.4.2 signs
 * but does not verify, so this walks the CMS by its lengths (der.ts: only the headers on the way to
 * the SignerInfos are read; the certificates, CRLs and unsigned attributes are skipped unread, so a
 * /Contents of any shape costs a few dozen header reads on the request's thread) and verifies with
 * node:crypto: the signed attributes must verify under our key (so the certificates the file embeds
 * are never trusted), and their messageDigest must equal the digest of the byte range. Undefined:
 * not a signature of ours (another signer's, or anything malformed or of another shape).
 */
export function checkSealSignature(bytes: Uint8Array, range: SignedRange, sealingKey: KeyObject): SealSignatureCheck | undefined {
  const der = signatureContents(bytes, range);
  if (!der?.length) return undefined;
  // ContentInfo { contentType signedData, [0] SignedData { version, digestAlgorithms, encapContentInfo, [0] certificates, [1] crls, signerInfos } }
  const root = readDer(der, 0);
  if (root?.tag !== TAG.SEQUENCE) return undefined;
  // The placeholder's room past the CMS is zeros as we write it: anything else there is a change too.
  const padded = der.subarray(root.end).every((b) => b === 0);
  const [type, wrapped] = childrenOf(der, root, 2) ?? [];
  if (!isOid(der, type, OID_SIGNED_DATA) || wrapped?.tag !== TAG.CONTEXT_0) return undefined;
  const [signedData] = childrenOf(der, wrapped, 1) ?? [];
  const signerInfos = childrenOf(der, signedData, 6)?.at(-1);
  if (signerInfos?.tag !== TAG.SET) return undefined;
  // More SignerInfos than ours ever has: only the first few are looked at, as before.
  const infos: Der[] = [];
  for (let at = signerInfos.start; at < signerInfos.end && infos.length < MAX_SIGNER_INFOS; ) {
    const info = readDer(der, at, signerInfos.end);
    if (!info) break;
    infos.push(info);
    at = info.end;
  }

  for (const info of infos) {
    // SignerInfo { version, sid, digestAlgorithm, [0] signedAttrs, signatureAlgorithm, signature, [1] unsignedAttrs }
    const parts = childrenOf(der, info, 7);
    const at = parts?.findIndex((p) => p.tag === TAG.CONTEXT_0) ?? -1;
    if (!parts || at < 3 || parts.length < at + 3) continue;
    const digestOid = childrenOf(der, parts[at - 1], 2)?.[0];
    const digest = DIGESTS.find(([hex]) => isOid(der, digestOid, hex))?.[1];
    const attrs = childrenOf(der, parts[at], MAX_SIGNED_ATTRIBUTES);
    const sigAlgorithm = childrenOf(der, parts[at + 1], 2)?.[0];
    const signature = parts[at + 2].tag === TAG.OCTET_STRING ? contentOf(der, parts[at + 2]) : new Uint8Array(0);
    if (!digest || !attrs || signature.length === 0) continue;
    // What was signed is the attributes' DER with their SET tag, not the [0] they are stored under.
    const signed = Buffer.from(der.subarray(parts[at].at, parts[at].end));
    signed[0] = TAG.SET;
    const key = isOid(der, sigAlgorithm, OID_RSA_PSS) ? { key: sealingKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO } : sealingKey;
    let ours = false;
    try {
      ours = verify(digest, signed, key, signature);
    } catch {
      ours = false;
    }
    if (!ours) continue;
    // Attribute { type, values SET { value } }: only now, for a signature of ours, are they read.
    const attr = (hex: string) => {
      const found = attrs.map((a) => childrenOf(der, a, 2)).find((a) => isOid(der, a?.[0], hex));
      return childrenOf(der, found?.[1], 1)?.[0];
    };
    const messageDigest = attr(OID_MESSAGE_DIGEST);
    const expected = messageDigest?.tag === TAG.OCTET_STRING ? Buffer.from(contentOf(der, messageDigest)) : Buffer.alloc(0);
    // Only now is the (large) signed range hashed: a forged signature never costs us that pass.
    const unsigned = parts[at + 3]?.tag === TAG.CONTEXT_1 ? childrenOf(der, parts[at + 3], MAX_UNSIGNED_ATTRIBUTES) : undefined;
    const stamp = unsigned?.map((a) => childrenOf(der, a, 2)).find((a) => isOid(der, a?.[0], OID_SIGNATURE_TIMESTAMP));
    const token = childrenOf(der, stamp?.[1], 1)?.[0];
    return {
      intact: padded && expected.length > 0 && expected.equals(signedDigest(bytes, range, digest)),
      signedAt: timeOf(der, attr(OID_SIGNING_TIME)),
      signatureValue: signature,
      timestampToken: token ? der.subarray(token.at, token.end) : undefined,
    };
  }
  return undefined;
}

/** The sealing certificate's public key, from its DER. */
export const sealingKeyOf = (certificateDer: Uint8Array): KeyObject => new X509Certificate(certificateDer).publicKey;
