import { X509Certificate, constants, verify, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { signatureContents, signedDigest, type SignedRange } from './signed-revisions.js';

/** A signature that verifies under the sealing certificate's key: this server made it. */
export type SealSignatureCheck = {
  /** The bytes it covers still hash to the digest it signed. */
  intact: boolean;
  /** Its signingTime attribute, when it has one. */
  signedAt: string | null;
};

const OID_SIGNED_DATA = '1.2.840.113549.1.7.2';
const OID_MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const OID_SIGNING_TIME = '1.2.840.113549.1.9.5';
const OID_RSA_PSS = '1.2.840.113549.1.1.10';
const DIGESTS: Record<string, string> = { '2.16.840.1.101.3.4.2.1': 'sha256', '2.16.840.1.101.3.4.2.2': 'sha384', '2.16.840.1.101.3.4.2.3': 'sha512' };
/** Deep enough for a timestamp token's certificates in the unsigned attributes; a deeper nest is not ours. */
const MAX_DER_DEPTH = 32;
const MAX_SIGNER_INFOS = 4;

type Node = forge.asn1.Asn1;
const { Class, Type } = forge.asn1;
const kids = (n: Node | undefined): Node[] => (n && Array.isArray(n.value) ? (n.value as Node[]) : []);
const bytesOf = (n: Node | undefined): string => (n && typeof n.value === 'string' ? n.value : '');
const oidOf = (n: Node | undefined): string => (n?.type === Type.OID ? forge.asn1.derToOid(bytesOf(n)) : '');
const isContext = (n: Node | undefined, tag: number) => n?.tagClass === Class.CONTEXT_SPECIFIC && n.type === tag && n.constructed;
/** node-forge 1.4 takes an options object (maxDepth among them); its typings still say `strict?: boolean`. */
const fromDer = forge.asn1.fromDer as unknown as (bytes: forge.util.ByteStringBuffer, options: { strict: boolean; parseAllBytes: boolean; decodeBitStrings: boolean; maxDepth: number }) => Node;

/**
 * Checks a PAdES (CMS, detached) signature against the sealing certificate. @libpdf/core 0.4.2 signs
 * but does not verify, so this reads the CMS with node-forge's DER parser (depth-bounded, on a string
 * of at most MAX_CONTENTS_HEX / 2 bytes) and verifies with node:crypto:
 * the signed attributes must verify under our key (so the certificates the file embeds are never
 * trusted), and their messageDigest must equal the digest of the byte range. Undefined: not a
 * signature of ours (another signer's, or anything malformed).
 */
export function checkSealSignature(bytes: Uint8Array, range: SignedRange, sealingKey: KeyObject): SealSignatureCheck | undefined {
  const der = signatureContents(bytes, range);
  if (!der?.length) return undefined;
  const input = forge.util.createBuffer(der.toString('binary'));
  let root: Node;
  try {
    root = fromDer(input, { strict: true, parseAllBytes: false, decodeBitStrings: false, maxDepth: MAX_DER_DEPTH });
  } catch {
    return undefined;
  }
  // The placeholder's room past the CMS is zeros as we write it: anything else there is a change too.
  const padded = /^\0*$/.test(input.bytes());
  const [type, wrapped] = kids(root);
  if (oidOf(type) !== OID_SIGNED_DATA || !isContext(wrapped, 0)) return undefined;
  const signerInfos = kids(kids(wrapped)[0]).at(-1);
  if (signerInfos?.type !== Type.SET) return undefined;

  for (const info of kids(signerInfos).slice(0, MAX_SIGNER_INFOS)) {
    const parts = kids(info);
    const at = parts.findIndex((p) => isContext(p, 0));
    if (at < 3) continue;
    const digest = DIGESTS[oidOf(kids(parts[at - 1])[0])];
    const attrs = kids(parts[at]);
    const sigAlgorithm = oidOf(kids(parts[at + 1])[0]);
    const signature = Buffer.from(bytesOf(parts[at + 2]), 'binary');
    const attr = (oid: string) => kids(kids(attrs.find((a) => oidOf(kids(a)[0]) === oid))[1])[0];
    if (!digest || signature.length === 0) continue;
    // What was signed is the attributes' DER with their SET tag, not the [0] they are stored under.
    const signed = Buffer.from(forge.asn1.toDer(forge.asn1.create(Class.UNIVERSAL, Type.SET, true, attrs)).getBytes(), 'binary');
    const key = sigAlgorithm === OID_RSA_PSS ? { key: sealingKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO } : sealingKey;
    let ours = false;
    try {
      ours = verify(digest, signed, key, signature);
    } catch {
      ours = false;
    }
    if (!ours) continue;
    // Only now is the (large) signed range hashed: a forged signature never costs us that pass.
    const expected = Buffer.from(bytesOf(attr(OID_MESSAGE_DIGEST)), 'binary');
    return { intact: padded && expected.length > 0 && expected.equals(signedDigest(bytes, range, digest)), signedAt: timeOf(attr(OID_SIGNING_TIME)) };
  }
  return undefined;
}

function timeOf(n: Node | undefined): string | null {
  try {
    if (n?.type === Type.UTCTIME) return forge.asn1.utcTimeToDate(bytesOf(n)).toISOString();
    if (n?.type === Type.GENERALIZEDTIME) return forge.asn1.generalizedTimeToDate(bytesOf(n)).toISOString();
  } catch {
    // A time we cannot read is no time.
  }
  return null;
}

/** The sealing certificate's public key, from its DER. */
export const sealingKeyOf = (certificateDer: Uint8Array): KeyObject => new X509Certificate(certificateDer).publicKey;
