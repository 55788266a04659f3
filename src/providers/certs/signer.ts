import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { chmod, mkdir, open as openFile, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { P12Signer } from '@libpdf/core';
import type Forge from 'node-forge';
import { ConfigError } from '../../config-error.js';

export type LoadedSigner = {
  signer: P12Signer;
  /** True when this call created the development certificate. */
  generated: boolean;
  /** The P12 file in use. */
  path: string;
  /** The self-signed certificate Signet made for itself (no SIGNING_CERT_P12_PATH). */
  development: boolean;
};

/**
 * @libpdf/core (its PKCS#12 reader) loads when a certificate is opened, not with the composition root
 * that imports this module: the main thread needs it only for the key (docs/operating.md: Memory).
 */
const libpdf = () => import('@libpdf/core');

export const DEV_P12_FILE = 'signing-cert.p12';
export const DEV_PASS_FILE = 'signing-cert.pass';
const DEV_COMMON_NAME = 'Signet development seal';

/**
 * The sealing certificate. With `p12Path` (SIGNING_CERT_P12_PATH) the operator's PKCS#12 is used;
 * without it a self-signed development certificate is generated once into DATA_DIR (key and random
 * passphrase in two 0600 files) and reused on every later start. Load it once and reuse the signer.
 */
export async function loadSigner(opts: { p12Path?: string; passphrase?: string; dataDir: string }): Promise<LoadedSigner> {
  if (opts.p12Path) {
    const bytes = await readFile(opts.p12Path).catch((err: NodeJS.ErrnoException) => {
      throw new ConfigError(`Invalid configuration: SIGNING_CERT_P12_PATH: cannot read ${opts.p12Path}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
    });
    return { signer: await openOperators(bytes, opts.passphrase ?? '', opts.p12Path), generated: false, path: opts.p12Path, development: false };
  }
  const path = join(opts.dataDir, DEV_P12_FILE);
  const passPath = join(opts.dataDir, DEV_PASS_FILE);
  const existing = await readExisting(path, passPath);
  if (existing) return { signer: await open(existing.p12, existing.passphrase, path), generated: false, path, development: true };

  await mkdir(opts.dataDir, { recursive: true });
  // Two processes starting together on a fresh DATA_DIR: one generates, the other waits for it.
  const lockPath = join(opts.dataDir, 'signing-cert.lock');
  const lock = await acquireLock(lockPath, () => readExisting(path, passPath));
  if (!lock) {
    const made = await readExisting(path, passPath);
    if (!made) throw new Error(`The development certificate in ${opts.dataDir} disappeared while it was being created`);
    return { signer: await open(made.p12, made.passphrase, path), generated: false, path, development: true };
  }
  try {
    // Whoever held the lock before us may have just finished.
    const made = await readExisting(path, passPath);
    if (made) return { signer: await open(made.p12, made.passphrase, path), generated: false, path, development: true };
    const passphrase = randomBytes(24).toString('base64url');
    const p12 = generateDevP12(passphrase);
    // Passphrase first, then the P12, each written whole and renamed into place, so a crash never
    // leaves a P12 without the passphrase that opens it.
    await writePrivate(passPath, passphrase);
    await writePrivate(path, p12);
    return { signer: await open(p12, passphrase, path), generated: true, path, development: true };
  } finally {
    await rm(lockPath, { force: true });
  }
}

/**
 * Both files, or null when there is no certificate yet. A passphrase file alone is a run that
 * stopped before writing the P12 (regenerated); a P12 without its passphrase is refused rather
 * than replaced, since documents may have been sealed with it.
 */
async function readExisting(path: string, passPath: string): Promise<{ p12: Uint8Array; passphrase: string } | null> {
  const read = async <T>(f: () => Promise<T>): Promise<T | null> => {
    try {
      return await f();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  };
  const [p12, passphrase] = await Promise.all([read(() => readFile(path)), read(() => readFile(passPath, 'utf8'))]);
  if (p12 && passphrase !== null) return { p12, passphrase: passphrase.trim() };
  if (p12) throw new Error(`Found ${path} without ${passPath}; restore the passphrase file, or remove the P12 to generate a new development certificate`);
  return null;
}

/**
 * Takes the lock file, or waits while another process holds it and answers false once that process
 * has produced the files. A lock older than a minute is a crashed run's and is taken over.
 */
async function acquireLock(lockPath: string, done: () => Promise<unknown>): Promise<boolean> {
  for (let waited = 0; ; waited += 100) {
    try {
      await (await openFile(lockPath, 'wx')).close();
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (await done()) return false;
    const age = Date.now() - (await stat(lockPath).then((s) => s.mtimeMs).catch(() => Date.now()));
    if (age > 60_000) await rm(lockPath, { force: true });
    else await new Promise((r) => setTimeout(r, 100));
  }
}

async function writePrivate(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, data, { mode: 0o600 });
  await chmod(tmp, 0o600); // umask cannot widen it, but an existing file keeps its old mode
  await rename(tmp, path);
}

/** The operator's P12: a wrong passphrase and an unreadable file are configuration errors, each named. */
async function openOperators(bytes: Uint8Array, passphrase: string, path: string): Promise<P12Signer> {
  const { P12Signer } = await libpdf();
  try {
    return await P12Signer.create(new Uint8Array(bytes), passphrase);
  } catch (err) {
    const message = (err as Error).message;
    // The MAC over the contents is keyed by the passphrase: a failed integrity check is a wrong one (or a damaged file).
    if (/password|integrity|\bMAC\b/i.test(message)) throw new ConfigError(`Invalid configuration: SIGNING_CERT_PASSPHRASE: does not open ${path} (wrong passphrase, or a damaged file)`);
    throw new ConfigError(`Invalid configuration: SIGNING_CERT_P12_PATH: ${path} is not a PKCS#12 file Signet can read (${message}); export it with openssl pkcs12 -export`);
  }
}

async function open(bytes: Uint8Array, passphrase: string, path: string): Promise<P12Signer> {
  const { P12Signer } = await libpdf();
  try {
    return await P12Signer.create(new Uint8Array(bytes), passphrase);
  } catch (err) {
    throw new Error(`Cannot open the signing certificate ${path}: ${(err as Error).message} (check SIGNING_CERT_PASSPHRASE)`);
  }
}

/** Self-signed RSA-2048 certificate for signing documents, valid ten years, as a PKCS#12. */
export function generateDevP12(passphrase: string, commonName = DEV_COMMON_NAME): Uint8Array {
  // Loaded here, not with the module: only a data directory's first start makes a certificate. Imported
  // by a bare process node-forge is 10.5 MiB of RSS (2.6 of heap); in a server's restart the saving was
  // within the noise of our measurement (docs/operating.md: Memory).
  const forge = createRequire(import.meta.url)('node-forge') as typeof Forge;
  const keys = forge.pki.rsa.generateKeyPair({ bits: 2048, e: 0x10001 });
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  // Positive 128-bit serial (leading 0x01 keeps the DER integer positive).
  cert.serialNumber = `01${forge.util.bytesToHex(forge.random.getBytesSync(15))}`;
  const now = new Date();
  cert.validity.notBefore = new Date(now.getTime() - 5 * 60_000);
  cert.validity.notAfter = new Date(now);
  cert.validity.notAfter.setFullYear(now.getFullYear() + 10);
  const subject = [
    { name: 'commonName', value: commonName },
    { name: 'organizationName', value: 'Signet' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', critical: true, digitalSignature: true, nonRepudiation: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  const asn1 = forge.pkcs12.toPkcs12Asn1(keys.privateKey, [cert], passphrase, { algorithm: 'aes256', friendlyName: commonName });
  return Uint8Array.from(Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary'));
}
