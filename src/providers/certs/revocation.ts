import { X509Certificate, constants, createHash, verify, type KeyObject } from 'node:crypto';
import type { RevocationProvider } from '@libpdf/core';
import { childrenOf, contentOf, isOid, oid, readDer, TAG, type Der } from '../../pdf/der.js';
import { fetchBounded, redact } from './fetch-bounded.js';

/**
 * Revocation data for PAdES B-LT, fetched at sealing: OCSP first, else the CRL, each exchange bounded
 * in time and size (fetch-bounded.ts), each answer checked before it is embedded (an OCSP response
 * signed by the issuer or its delegated responder and naming the certificate; a CRL signed by the
 * issuer), and every status remembered: a certificate found REVOKED is never sealed with.
 */

export type CertStatus = 'good' | 'revoked' | 'unknown';

const OCSP_MAX_BYTES = 64 * 1024;
/** Large public CAs publish CRLs of a few MB; a larger answer is refused rather than read. */
const CRL_MAX_BYTES = 16 * 1024 * 1024;
const OID_OCSP_BASIC = oid('1.3.6.1.5.5.7.48.1.1');
const OID_SHA1 = oid('1.3.14.3.2.26');
const OID_CRL_DP = oid('2.5.29.31');
const EKU_OCSP_SIGNING = '1.3.6.1.5.5.7.3.9';
const SIG_DIGESTS: [string, string][] = [
  ['1.2.840.113549.1.1.11', 'sha256'],
  ['1.2.840.113549.1.1.12', 'sha384'],
  ['1.2.840.113549.1.1.13', 'sha512'],
  ['1.2.840.113549.1.1.5', 'sha1'],
  ['1.2.840.10045.4.3.2', 'sha256'],
  ['1.2.840.10045.4.3.3', 'sha384'],
  ['1.2.840.10045.4.3.4', 'sha512'],
].map(([o, d]) => [oid(o), d]);
const OID_RSA_PSS = oid('1.2.840.113549.1.1.10');

/** Where a certificate says its revocation status is published. */
export function revocationSources(certDer: Uint8Array): { ocsp: string[]; crl: string[] } {
  const cert = new X509Certificate(certDer);
  const ocsp = (cert.infoAccess ?? '')
    .split('\n')
    .map((l) => /^OCSP - URI:(\S+)$/.exec(l.trim())?.[1])
    .filter((u): u is string => !!u && /^https?:\/\//.test(u));
  const crl: string[] = [];
  const ext = extension(certDer, OID_CRL_DP);
  if (ext) collectUris(ext, readDer(ext, 0), crl, 0);
  return { ocsp, crl: crl.filter((u) => /^https?:\/\//.test(u)) };
}

/** Whether any certificate of the chain publishes revocation information (a self-signed seal does not). */
export const chainHasRevocationInfo = (chain: Uint8Array[]): boolean => chain.some((c) => {
  const s = revocationSources(c);
  return s.ocsp.length > 0 || s.crl.length > 0;
});

export type SealRevocation = RevocationProvider & {
  /** The status of `cert`, from OCSP else the CRL; undefined when neither could be had. */
  statusOf(cert: Uint8Array, issuer: Uint8Array): Promise<CertStatus | undefined>;
  /** Certificates found revoked so far (their subjects). */
  revoked: string[];
};

/** One seal's revocation fetching: answers are kept, so the check before signing and the DSS share them. */
export function createSealRevocation(o: { timeoutMs: number; fetch?: typeof fetch }): SealRevocation {
  const ocspCache = new Map<string, Promise<{ der: Uint8Array; status: CertStatus } | null>>();
  const crlCache = new Map<string, Promise<Uint8Array | null>>();
  const revoked: string[] = [];
  const key = (d: Uint8Array) => createHash('sha256').update(d).digest('hex');
  const note = (cert: Uint8Array, status: CertStatus | undefined) => {
    if (status === 'revoked') revoked.push(new X509Certificate(cert).subject.replace(/\n/g, ', '));
    return status;
  };

  const ocspOf = (cert: Uint8Array, issuer: Uint8Array) => {
    const k = key(cert);
    if (!ocspCache.has(k)) ocspCache.set(k, fetchOcsp(cert, issuer, o).catch(() => null));
    return ocspCache.get(k)!;
  };
  /** The issuer's CRL, verified, with the certificate's status in it. */
  const crlOf = async (cert: Uint8Array, issuer?: Uint8Array): Promise<{ der: Uint8Array; status: CertStatus } | null> => {
    for (const url of revocationSources(cert).crl) {
      if (!crlCache.has(url)) crlCache.set(url, fetchBounded(url, { headers: { accept: 'application/pkix-crl' } }, { timeoutMs: o.timeoutMs, maxBytes: CRL_MAX_BYTES }, o.fetch).then((r) => (r.status === 200 ? r.body : null)).catch(() => null));
      const der = await crlCache.get(url)!;
      const status = der && crlStatus(der, cert, issuer);
      if (der && status) return { der, status };
    }
    return null;
  };

  return {
    revoked,
    async statusOf(cert, issuer) {
      const ocsp = await ocspOf(cert, issuer);
      if (ocsp) return note(cert, ocsp.status);
      return note(cert, (await crlOf(cert, issuer))?.status);
    },
    async getOCSP(cert, issuer) {
      const ocsp = await ocspOf(cert, issuer);
      note(cert, ocsp?.status);
      return ocsp?.der ?? null;
    },
    async getCRL(cert) {
      const crl = await crlOf(cert);
      note(cert, crl?.status);
      // Reached when OCSP gave nothing: a certificate that publishes a status we could not get makes
      // the library warn REVOCATION_UNAVAILABLE, and the seal fails rather than embed half the data.
      const s = revocationSources(cert);
      if (!crl && (s.ocsp.length || s.crl.length)) throw new Error('revocation status unavailable');
      return crl?.der ?? null;
    },
  };
}

async function fetchOcsp(cert: Uint8Array, issuer: Uint8Array, o: { timeoutMs: number; fetch?: typeof fetch }): Promise<{ der: Uint8Array; status: CertStatus } | null> {
  const request = ocspRequest(cert, issuer);
  for (const url of revocationSources(cert).ocsp) {
    const res = await fetchBounded(url, { method: 'POST', headers: { 'content-type': 'application/ocsp-request', accept: 'application/ocsp-response' }, body: Buffer.from(request) }, { timeoutMs: o.timeoutMs, maxBytes: OCSP_MAX_BYTES }, o.fetch).catch(() => undefined);
    if (res?.status !== 200) continue;
    const status = ocspStatus(res.body, cert, issuer);
    if (status) return { der: res.body, status };
  }
  return null;
}

// --- X.509, OCSP and CRL by their DER (der.ts: headers only, bounded by the bytes given) ---

/** Certificate { tbs { [0] version, serial, sigAlg, issuer, validity, subject, spki, …, [3] extensions } }. */
function tbsParts(der: Uint8Array): { serial: Der; issuer: Der; subject: Der; spki: Der; extensions?: Der } | undefined {
  const [tbs] = childrenOf(der, readDer(der, 0), 3) ?? [];
  const parts = childrenOf(der, tbs, 10);
  if (!parts) return undefined;
  const p = parts[0]?.tag === TAG.CONTEXT_0 ? parts.slice(1) : parts;
  const extensions = parts.find((x) => x.tag === 0xa3);
  return p.length >= 6 ? { serial: p[0], issuer: p[2], subject: p[4], spki: p[5], extensions } : undefined;
}

function extension(der: Uint8Array, oidHex: string): Uint8Array | undefined {
  const ext = tbsParts(der)?.extensions;
  const list = childrenOf(der, childrenOf(der, ext, 1)?.[0], 64) ?? [];
  for (const e of list) {
    const [id, ...rest] = childrenOf(der, e, 3) ?? [];
    if (isOid(der, id, oidHex)) return contentOf(der, rest.at(-1));
  }
  return undefined;
}

function collectUris(buf: Uint8Array, d: Der | undefined, out: string[], depth: number): void {
  if (!d || depth > 6 || out.length >= 8) return;
  if (d.tag === 0x86) out.push(Buffer.from(contentOf(buf, d)).toString('latin1'));
  for (const c of childrenOf(buf, d, 16) ?? []) collectUris(buf, c, out, depth + 1);
}

const tlv = (tag: number, ...parts: Uint8Array[]): Uint8Array => {
  const body = Buffer.concat(parts);
  const n = body.length;
  const len = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : n < 0x10000 ? [0x82, n >> 8, n & 0xff] : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...len]), body]);
};
const slice = (buf: Uint8Array, d: Der) => buf.subarray(d.at, d.end);
const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest();

/** The issuer's public key bits (the BIT STRING's content after its unused-bits octet). */
function keyBits(der: Uint8Array): Uint8Array {
  const spki = tbsParts(der)?.spki;
  const bits = childrenOf(der, spki, 2)?.[1];
  return contentOf(der, bits).subarray(1);
}

/** CertID { sha1, hash(issuer name), hash(issuer key), serial } as RFC 6960 asks; one request, no nonce. */
function certId(cert: Uint8Array, issuer: Uint8Array): Uint8Array {
  const c = tbsParts(cert)!;
  return tlv(TAG.SEQUENCE, tlv(TAG.SEQUENCE, tlv(TAG.OID, Buffer.from(OID_SHA1, 'hex')), Buffer.from([5, 0])), tlv(TAG.OCTET_STRING, sha1(slice(cert, c.issuer))), tlv(TAG.OCTET_STRING, sha1(keyBits(issuer))), slice(cert, c.serial));
}

function ocspRequest(cert: Uint8Array, issuer: Uint8Array): Uint8Array {
  return tlv(TAG.SEQUENCE, tlv(TAG.SEQUENCE, tlv(TAG.SEQUENCE, tlv(TAG.SEQUENCE, certId(cert, issuer)))));
}

/** Verifies `signature` over `data` under `key` with the algorithm its AlgorithmIdentifier names. */
function verifies(buf: Uint8Array, algorithm: Der | undefined, data: Uint8Array, signature: Uint8Array, key: KeyObject): boolean {
  const alg = childrenOf(buf, algorithm, 2)?.[0];
  const pss = isOid(buf, alg, OID_RSA_PSS);
  const digest = pss ? 'sha256' : SIG_DIGESTS.find(([hex]) => isOid(buf, alg, hex))?.[1];
  if (!digest) return false;
  try {
    return verify(digest, data, pss ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_AUTO } : key, signature);
  } catch {
    return false;
  }
}

/**
 * The status an OCSP response gives `cert`, or undefined when it is not a successful response, not
 * signed by the issuer or a responder the issuer delegated to, or says nothing about this certificate.
 */
export function ocspStatus(der: Uint8Array, cert: Uint8Array, issuer: Uint8Array): CertStatus | undefined {
  const [status, wrapped] = childrenOf(der, readDer(der, 0), 2) ?? [];
  if (status?.tag !== 0x0a || contentOf(der, status)[0] !== 0) return undefined;
  const [type, octets] = childrenOf(der, childrenOf(der, wrapped, 1)?.[0], 2) ?? [];
  if (!isOid(der, type, OID_OCSP_BASIC) || octets?.tag !== TAG.OCTET_STRING) return undefined;
  const basic = contentOf(der, octets);
  const [tbs, sigAlg, sig, certs] = childrenOf(basic, readDer(basic, 0), 4) ?? [];
  if (!tbs || sig?.tag !== 0x03) return undefined;
  const signature = contentOf(basic, sig).subarray(1);
  const issuerCert = new X509Certificate(issuer);
  const candidates: KeyObject[] = [issuerCert.publicKey];
  for (const c of childrenOf(basic, childrenOf(basic, certs, 1)?.[0], 4) ?? []) {
    try {
      const responder = new X509Certificate(slice(basic, c));
      if (responder.checkIssued(issuerCert) && responder.verify(issuerCert.publicKey) && (responder.keyUsage ?? []).includes(EKU_OCSP_SIGNING)) candidates.push(responder.publicKey);
    } catch {
      /* not a certificate: ignored */
    }
  }
  if (!candidates.some((k) => verifies(basic, sigAlg, slice(basic, tbs), signature, k))) return undefined;
  const data = childrenOf(basic, tbs, 5) ?? [];
  const responses = data.find((d, i) => d.tag === TAG.SEQUENCE && i > 0 && data[i - 1].tag === TAG.GENERALIZED_TIME);
  const wanted = Buffer.from(certId(cert, issuer));
  for (const single of childrenOf(basic, responses, 64) ?? []) {
    const [id, state] = childrenOf(basic, single, 5) ?? [];
    if (!id || !state || !wanted.equals(slice(basic, id))) continue;
    return state.tag === 0x80 ? 'good' : state.tag === 0xa1 ? 'revoked' : 'unknown';
  }
  return undefined;
}

/** The status a CRL gives `cert` (listed: revoked), or undefined when it is not the issuer's, signed by it. */
export function crlStatus(der: Uint8Array, cert: Uint8Array, issuer?: Uint8Array): CertStatus | undefined {
  const [tbs, sigAlg, sig] = childrenOf(der, readDer(der, 0), 3) ?? [];
  if (tbs?.tag !== TAG.SEQUENCE || sig?.tag !== 0x03) return undefined;
  const c = tbsParts(cert);
  if (!c) return undefined;
  // TBSCertList { version?, signature, issuer, thisUpdate, nextUpdate?, revokedCertificates?, [0] extensions? }: walked by hand, a CRL may list many.
  const parts: Der[] = [];
  for (let at = tbs.start; at < tbs.end && parts.length < 7; ) {
    const d = readDer(der, at, tbs.end);
    if (!d) return undefined;
    parts.push(d);
    at = d.end;
  }
  const p = parts[0]?.tag === TAG.INTEGER ? parts.slice(1) : parts;
  if (!p[1] || !Buffer.from(slice(der, p[1])).equals(Buffer.from(slice(cert, c.issuer)))) return undefined;
  if (issuer && !verifies(der, sigAlg, slice(der, tbs), contentOf(der, sig).subarray(1), new X509Certificate(issuer).publicKey)) return undefined;
  const list = p.slice(3).find((d) => d.tag === TAG.SEQUENCE);
  const serial = Buffer.from(slice(cert, c.serial));
  for (let at = list?.start ?? 0; list && at < list.end; ) {
    const entry = readDer(der, at, list.end);
    if (!entry) return undefined;
    const first = readDer(der, entry.start, entry.end);
    if (first && serial.equals(slice(der, first))) return 'revoked';
    at = entry.end;
  }
  return 'good';
}

export { redact };
