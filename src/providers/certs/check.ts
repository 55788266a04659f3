import { constants, randomBytes, verify, X509Certificate } from 'node:crypto';
import { ConfigError } from '../../config-error.js';
import { siblingModule, startWorker } from '../../pdf/sandbox.js';
import type { LoadedSigner } from './signer.js';

/** The sealing certificate as /health and the dashboard show it: checked once at start. */
export type SealCertificate = {
  certificate: 'development' | 'configured';
  subject: string;
  issuer: string;
  notAfter: string;
  /** PDF readers will show the seal as untrusted: the development seal, or a self-signed one the operator allowed. */
  selfSigned: boolean;
  /** Each thing an operator should act on (untrusted, expiring soon, unusual key usage); none: empty. */
  warnings: string[];
};

export const DEVELOPMENT_SEAL_WARNING = 'development seal: not trusted by PDF readers';
export const EXPIRY_WARNING_DAYS = 30;
const DAY_MS = 86_400_000;
const MAX_CHAIN = 10;

/**
 * Extended key usages Adobe Acrobat accepts for a document signature (when the extension is present at
 * all): emailProtection, codeSigning, anyExtendedKeyUsage, Adobe Authentic Documents Trust, Microsoft
 * document signing, and RFC 9336 documentSigning.
 */
const SIGNING_EKUS = new Set(['1.3.6.1.5.5.7.3.4', '1.3.6.1.5.5.7.3.3', '2.5.29.37.0', '1.2.840.113583.1.1.5', '1.3.6.1.4.1.311.10.3.12', '1.3.6.1.5.5.7.3.36']);

const refuse = (message: string) => new ConfigError(`Invalid configuration: SIGNING_CERT_P12_PATH: ${message}`);
const nameOf = (dn: string) => dn.split('\n').join(', ');
const day = (d: Date) => d.toISOString().slice(0, 10);

/**
 * Checks the certificate the seal job will sign with, as PDF readers will: in its validity period, the
 * private key its own, key usage that allows signing, and a chain from it to a self-signed root inside
 * the P12 (readers are given that chain in each signature; a missing link is a signature nobody can
 * validate). A self-signed leaf is the development seal, or the operator's explicit choice
 * (SIGNING_CERT_ALLOW_SELF_SIGNED). Throws ConfigError with one line saying what to fix.
 */
export async function checkSealingCertificate(loaded: LoadedSigner, opts: { allowSelfSigned: boolean; now?: Date }): Promise<SealCertificate> {
  const now = opts.now ?? new Date();
  const development = loaded.development;
  const leaf = new X509Certificate(loaded.signer.certificate);
  const pool = loaded.signer.certificateChain.map((der) => new X509Certificate(der));
  const warnings: string[] = [];
  const where = `${loaded.path} (${nameOf(leaf.subject)})`;

  for (const cert of [leaf, ...pool]) {
    const subject = nameOf(cert.subject);
    if (now < new Date(cert.validFrom)) throw refuse(`the certificate ${subject} in ${loaded.path} is not valid before ${day(new Date(cert.validFrom))}`);
    if (now > new Date(cert.validTo)) throw refuse(`the certificate ${subject} in ${loaded.path} expired on ${day(new Date(cert.validTo))}; renew it and export a new P12`);
  }

  if (!(await keyMatches(loaded, leaf))) {
    throw refuse(`the private key in ${loaded.path} does not match its certificate ${nameOf(leaf.subject)} (the P12 must hold the signing certificate first, with its own key)`);
  }

  const usage = keyUsageOf(leaf.raw);
  if (usage && !usage.digitalSignature && !usage.nonRepudiation) {
    throw refuse(`the certificate ${where} does not allow signing: its key usage has neither digitalSignature nor nonRepudiation`);
  }
  const eku = leaf.keyUsage;
  if (eku?.length && !eku.some((oid) => SIGNING_EKUS.has(oid))) {
    warnings.push(`extended key usage (${eku.join(', ')}) names no document-signing purpose: Adobe Acrobat may reject the signature`);
  }

  const selfSigned = isSelfSigned(leaf);
  if (selfSigned) {
    if (development) warnings.push(DEVELOPMENT_SEAL_WARNING);
    else if (!opts.allowSelfSigned) throw refuse(`the certificate ${where} is self-signed, which PDF readers do not trust: use one issued by a CA (docs/operating.md: The sealing certificate), or set SIGNING_CERT_ALLOW_SELF_SIGNED=true to seal with it anyway`);
    else warnings.push('self-signed certificate: not trusted by PDF readers');
  } else {
    buildChain(leaf, pool, loaded.path);
  }

  const daysLeft = Math.floor((new Date(leaf.validTo).getTime() - now.getTime()) / DAY_MS);
  if (daysLeft < EXPIRY_WARNING_DAYS) warnings.push(`the sealing certificate expires on ${day(new Date(leaf.validTo))} (in ${daysLeft} days): renew it`);

  return {
    certificate: development ? 'development' : 'configured',
    subject: nameOf(leaf.subject),
    issuer: nameOf(leaf.issuer),
    notAfter: new Date(leaf.validTo).toISOString(),
    selfSigned,
    warnings,
  };
}

// By name and signature: checkIssued would also want keyCertSign, which a self-signed seal (the development one) lacks.
const isSelfSigned = (cert: X509Certificate) => cert.subject === cert.issuer && cert.verify(cert.publicKey);

/** Leaf → issuer → … → a self-signed root, each link signed by the next, all from the P12. */
function buildChain(leaf: X509Certificate, pool: X509Certificate[], path: string): void {
  let current = leaf;
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    if (isSelfSigned(current)) return;
    const issuer = pool.find((c) => c !== current && c.subject === current.issuer && current.verify(c.publicKey));
    if (!issuer) {
      throw refuse(
        `${path} does not hold the certificate of ${nameOf(current.issuer)}, which issued ${nameOf(current.subject)}: export the P12 with the whole chain up to the root (openssl pkcs12 -export … -certfile chain.pem)`,
      );
    }
    // checkIssued: OpenSSL's own test, which also wants the issuer's key usage to allow keyCertSign.
    if (!issuer.ca || !current.checkIssued(issuer)) throw refuse(`${nameOf(issuer.subject)} in ${path} issued ${nameOf(current.subject)} but is not a CA certificate (basicConstraints CA:TRUE and keyCertSign)`);
    current = issuer;
  }
  throw refuse(`the chain in ${path} is longer than ${MAX_CHAIN} certificates`);
}

/** Signs a random probe with the key the seal job uses and verifies it with the certificate it embeds. */
async function keyMatches(loaded: LoadedSigner, leaf: X509Certificate): Promise<boolean> {
  const probe = randomBytes(32);
  const { signer } = loaded;
  try {
    const signature = await signer.sign(probe, 'SHA-256');
    const key = signer.signatureAlgorithm === 'RSA-PSS' ? { key: leaf.publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } : leaf.publicKey;
    return verify('sha256', probe, key, signature);
  } catch {
    // A key of another type than the certificate's cannot even be used with it.
    return false;
  }
}

/**
 * The keyUsage extension's first two bits, or undefined when the certificate has none. A small DER
 * walk (Certificate → tbsCertificate → [3] → Extensions): node:crypto exposes only the extended key
 * usage, and node-forge cannot read certificates with EC keys.
 */
export function keyUsageOf(der: Uint8Array): { digitalSignature: boolean; nonRepudiation: boolean } | undefined {
  const cert = element(der, 0);
  const tbs = cert && inside(der, cert)[0];
  const tagged = tbs && inside(der, tbs).find((e) => e.tag === 0xa3);
  const list = tagged && inside(der, tagged)[0];
  for (const ext of list ? inside(der, list) : []) {
    const [oid, ...rest] = inside(der, ext);
    if (oid?.tag !== 0x06 || Buffer.compare(der.subarray(oid.start, oid.end), KEY_USAGE_OID) !== 0) continue;
    const octets = rest.find((e) => e.tag === 0x04);
    const bits = octets && inside(der, octets)[0];
    if (!bits || bits.tag !== 0x03 || bits.end - bits.start < 2) return { digitalSignature: false, nonRepudiation: false };
    const first = der[bits.start + 1];
    return { digitalSignature: (first & 0x80) !== 0, nonRepudiation: (first & 0x40) !== 0 };
  }
  return undefined;
}

const KEY_USAGE_OID = Buffer.from([0x55, 0x1d, 0x0f]); // 2.5.29.15

/** One DER element: its tag and where its contents start and end. */
type Element = { tag: number; start: number; end: number };

function element(der: Uint8Array, at: number): Element | undefined {
  if (at + 2 > der.length) return undefined;
  const tag = der[at];
  let length = der[at + 1];
  let start = at + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    if (n === 0 || n > 4 || start + n > der.length) return undefined;
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + der[start + i];
    start += n;
  }
  const end = start + length;
  return end <= der.length ? { tag, start, end } : undefined;
}

function inside(der: Uint8Array, parent: Element): Element[] {
  const out: Element[] = [];
  for (let pos = parent.start; pos < parent.end; ) {
    const el = element(der, pos);
    if (!el || el.end > parent.end) break;
    out.push(el);
    pos = el.end;
  }
  return out;
}

/** What the check opens (SIGNING_CERT_P12_PATH and its passphrase, or DATA_DIR's development seal) and how it judges it. */
export type SealCheckInput = { p12Path?: string; passphrase?: string; dataDir: string; allowSelfSigned: boolean };
type CheckReply = { outcome: SealCertificate } | { error: string; config: boolean };

/**
 * loadSigner and checkSealingCertificate in a short-lived worker thread (check-worker.ts): opening a
 * PKCS#12 loads @libpdf/core and pkijs, and making the development seal node-forge, some 15 MiB that
 * an idle server would otherwise hold for good; the main thread loads them with its first seal
 * (docs/operating.md: Memory). Answers once the worker has ended; a ConfigError stays one.
 */
export function checkInWorker(input: SealCheckInput): Promise<SealCertificate> {
  const worker = startWorker(siblingModule('check-worker', import.meta.url), { workerData: input });
  return new Promise((resolve, reject) => {
    let reply: CheckReply | undefined;
    let failure: Error | undefined;
    worker.once('message', (m: CheckReply) => (reply = m));
    worker.once('error', (err) => (failure = err));
    worker.once('exit', (code) => {
      if (reply && 'outcome' in reply) resolve(reply.outcome);
      else if (reply) reject(reply.config ? new ConfigError(reply.error) : new Error(reply.error));
      else reject(failure ?? new Error(`the sealing certificate check ended (exit ${code}) without an answer`));
    });
  });
}

/**
 * The check, run once per process (at start by main) and kept: /health and the dashboard read the
 * outcome without doing any work. Before the check has run (a test app that never started) it is unknown.
 */
export function createSealCheck(run: () => Promise<SealCertificate>) {
  let running: Promise<SealCertificate> | undefined;
  let outcome: SealCertificate | undefined;
  return {
    check: (): Promise<SealCertificate> => (running ??= run().then((c) => (outcome = c))),
    checked: (): SealCertificate | undefined => outcome,
  };
}
