// test-lane: once (PDF sealing against local TSA, OCSP and CRL peers; opens no database)
/**
 * PAdES levels B-B … B-LTA against real local peers (test/fixtures/pki.ts: an OpenSSL CA with an OCSP
 * responder and CRLs, and `openssl ts` as the TSA). Each sealed file is checked by pdfsig and by
 * checks of our own that do not trust the code that made it: `openssl ts -verify` on the timestamp
 * token against the hash of the signature value, and the DSS read back for the chain and the OCSP
 * response.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { P12Signer, PDF, PdfArray, PdfDict, PdfStream } from '@libpdf/core';
import { loadConfig } from '../src/config.js';
import { closePdfWorkers, prepareDocument } from '../src/pdf/prepare.js';
import { sealDocument, type SealPades } from '../src/pdf/seal.js';
import { closeSealWorkers, createSealer } from '../src/pdf/seal-sandbox.js';
import { findSignedRanges, signatureContents } from '../src/pdf/signed-revisions.js';
import type { CertificateData, PreparedDocument } from '../src/pdf/types.js';
import { loadSigner } from '../src/providers/certs/signer.js';
import { PKI_PASS, startTestPki, type TestPki } from './fixtures/pki.js';
import * as fx from './fixtures/pdfs.js';

const LIMITS = { timeoutMs: 60_000, maxMemoryMb: 256 };
const tmp = mkdtempSync(path.join(tmpdir(), 'signet-levels-'));
let pki: TestPki;
let signer: P12Signer;
let doc: PreparedDocument & { bytes: Uint8Array };

before(async () => {
  pki = await startTestPki();
  signer = await P12Signer.create(readFileSync(pki.signerP12), PKI_PASS);
  const prepared = await prepareDocument([await fx.plainPdf(1)], LIMITS);
  assert.ok('bytes' in prepared, 'a small document comes back in memory');
  doc = prepared;
});
after(async () => {
  await closeSealWorkers();
  await closePdfWorkers();
  await pki?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const certificate = (): CertificateData => ({
  envelopeId: 'env_levels',
  title: 'Levels',
  documentSha256: doc.sha256,
  completedAt: '2026-01-01T12:00:00.000Z',
  recipients: [{ name: 'Ana', email: 'ana@example.com', role: 'SIGNER', status: 'SIGNED', ip: null, userAgent: null, viewedAt: null, signedAt: '2026-01-01T11:55:00.000Z' }],
  events: [],
});
const pades = (level: SealPades['level'], extra: Partial<SealPades> = {}): SealPades => ({ level, tsa: { urls: [pki.tsaUrl], headers: {}, timeoutMs: 5_000 }, revocationTimeoutMs: 5_000, ...extra });
const seal = (p: SealPades, s: P12Signer = signer) => sealDocument({ original: doc.bytes, fields: [], hide: [], certificate: certificate(), signer: s, pades: p });

function file(bytes: Uint8Array, ext = 'pdf'): string {
  const f = path.join(tmp, `${Math.random().toString(36).slice(2)}.${ext}`);
  writeFileSync(f, bytes);
  return f;
}

/** pdfsig's report: every signature valid (trust is the reader's business: an unknown CA is fine). */
function pdfsig(bytes: Uint8Array): string {
  const out = spawnSync('pdfsig', [file(bytes)], { encoding: 'utf8' }).stdout;
  assert.match(out, /Signature #1:/, out);
  // Poppler does not verify document timestamps (ETSI.RFC3161: "Signature Type: unknown"): checked with openssl below.
  for (const sig of out.split(/Signature #\d+:/).slice(1).filter((s) => !/Signature Type: unknown/.test(s))) assert.match(sig, /Signature Validation: Signature is Valid\./, out);
  return out;
}

/** The SignerInfo's signature value and its unsigned signature-time-stamp token, read with openssl's asn1parse (not our DER code). */
function signatureParts(cms: Uint8Array): { value: Buffer; token: Buffer | undefined } {
  const f = file(cms, 'der');
  const lines = execFileSync('openssl', ['asn1parse', '-inform', 'DER', '-in', f], { encoding: 'utf8' }).split('\n');
  const at = (l: string) => Number(/^\s*(\d+):/.exec(l)![1]);
  const sigTokenOid = lines.findIndex((l) => /:id-smime-aa-timeStampToken/.test(l));
  // The SignerInfo's signature OCTET STRING: the last OCTET STRING before the unsigned attributes.
  const before = lines.slice(0, sigTokenOid === -1 ? lines.length : sigTokenOid);
  const valueLine = before.filter((l) => /prim: OCTET STRING/.test(l)).at(-1)!;
  const value = Buffer.from(/\[HEX DUMP\]:([0-9A-F]+)/.exec(valueLine)?.[1] ?? '', 'hex');
  if (sigTokenOid === -1) return { value, token: undefined };
  // SET { token SEQUENCE } follows the OID: the token is the SEQUENCE at the next line but one.
  const tokenAt = at(lines[sigTokenOid + 2]);
  const der = Buffer.from(cms);
  const len = der[tokenAt + 1] & 0x80 ? der.readUIntBE(tokenAt + 2, der[tokenAt + 1] & 0x7f) + 2 + (der[tokenAt + 1] & 0x7f) : der[tokenAt + 1] + 2;
  return { value, token: der.subarray(tokenAt, tokenAt + len) };
}

/** openssl ts -verify: the token stamps sha256(signature value) and its TSA signature verifies up to our test root. */
function tokenStampsSignature(token: Buffer, value: Buffer): void {
  const digest = createHash('sha256').update(value).digest('hex');
  const r = spawnSync('openssl', ['ts', '-verify', '-digest', digest, '-token_in', '-in', file(token, 'tst'), '-CAfile', pki.rootPem, '-untrusted', pki.intermediatePem], { encoding: 'utf8' });
  assert.match(r.stdout, /Verification: OK/, r.stdout + r.stderr);
}

/** The DSS as written: its certificates, OCSP responses and CRLs (PDF structure read with @libpdf/core). */
async function dssOf(bytes: Uint8Array): Promise<{ certs: Buffer[]; ocsps: Buffer[]; crls: Buffer[] } | undefined> {
  const pdf = await PDF.load(bytes);
  const dss = pdf.getCatalog().get('DSS');
  const dict = dss && (pdf.getObject(dss as never) ?? dss);
  if (!(dict instanceof PdfDict)) return undefined;
  const streams = (name: string) => {
    const arr = dict.get(name);
    const list = arr && (pdf.getObject(arr as never) ?? arr);
    if (!(list instanceof PdfArray)) return [];
    return Array.from({ length: list.length }, (_, i) => {
      const s = pdf.getObject(list.at(i) as never) as PdfStream;
      return Buffer.from(s.getDecodedData());
    });
  };
  return { certs: streams('Certs'), ocsps: streams('OCSPs'), crls: streams('CRLs') };
}

const subjectOf = (der: Buffer) => execFileSync('openssl', ['x509', '-inform', 'DER', '-noout', '-subject'], { input: der, encoding: 'utf8' });
const ocspText = (der: Buffer) => execFileSync('openssl', ['ocsp', '-respin', file(der, 'ocsp'), '-resp_text', '-noverify'], { encoding: 'utf8' });

describe('PAdES levels', () => {
  test('B-B: a valid seal with no timestamp', async () => {
    const sealed = await seal({ level: 'B-B' });
    pdfsig(sealed);
    const [range] = findSignedRanges(sealed);
    assert.equal(signatureParts(signatureContents(sealed, range)!).token, undefined);
  });

  test('B-T: the signature carries an RFC 3161 token over its own value, from the TSA', async () => {
    const before = pki.tsa.requests;
    const sealed = await seal(pades('B-T'));
    assert.equal(pki.tsa.requests, before + 1);
    const out = pdfsig(sealed);
    assert.match(out, /Signature Timestamp|Signing Time/);
    const [range] = findSignedRanges(sealed);
    const { value, token } = signatureParts(signatureContents(sealed, range)!);
    assert.ok(token, 'a signature-time-stamp attribute');
    tokenStampsSignature(token, value);
    assert.equal(await dssOf(sealed), undefined, 'no DSS at B-T');
  });

  test('B-LT: the DSS holds the chain, the TSA chain and the OCSP responses', async () => {
    const ocspBefore = pki.ocspRequests;
    const sealed = await seal(pades('B-LT'));
    pdfsig(sealed);
    assert.ok(pki.ocspRequests > ocspBefore, 'OCSP was asked');
    const dss = (await dssOf(sealed))!;
    assert.ok(dss, 'a DSS');
    const subjects = dss.certs.map(subjectOf).join('');
    for (const cn of ['Signet Test Document Seal', 'Signet Test Intermediate CA', 'Signet Test Root CA', 'Signet Test TSA']) assert.match(subjects, new RegExp(cn));
    const statuses = dss.ocsps.map(ocspText);
    assert.ok(statuses.some((t) => /Serial Number: 2001[\s\S]*Cert Status: good/.test(t)), 'the seal certificate: good');
    assert.ok(statuses.some((t) => /Serial Number: 2004[\s\S]*Cert Status: good/.test(t)), 'the TSA certificate: good');
    assert.ok(statuses.some((t) => /Serial Number: 1001[\s\S]*Cert Status: good/.test(t)), 'the intermediate: good (from the root)');
    const [range] = findSignedRanges(sealed).slice(-1);
    const { value, token } = signatureParts(signatureContents(sealed, range)!);
    tokenStampsSignature(token!, value);
  });

  test('B-LTA: a document timestamp over the whole file after the DSS', async () => {
    const sealed = await seal(pades('B-LTA'));
    const out = pdfsig(sealed);
    assert.match(out, /Signature #2:/, out);
    const ranges = findSignedRanges(sealed);
    assert.equal(ranges.length, 2);
    assert.ok(ranges[0].end > ranges[1].end, 'the document timestamp is the later one');
    // It stamps everything before it (the seal and the first DSS); only the TSA chain's own DSS update follows.
    const docTs = Buffer.from(signatureContents(sealed, ranges[0])!);
    const token = docTs.subarray(0, 4 + docTs.readUInt16BE(2));
    const covered = Buffer.concat([sealed.subarray(0, ranges[0].contentsStart), sealed.subarray(ranges[0].contentsEnd, ranges[0].end)]);
    const r = spawnSync('openssl', ['ts', '-verify', '-data', file(covered, 'bin'), '-token_in', '-in', file(token, 'tst'), '-CAfile', pki.rootPem, '-untrusted', pki.intermediatePem], { encoding: 'utf8' });
    assert.match(r.stdout, /Verification: OK/, r.stdout + r.stderr);
    assert.ok((await dssOf(sealed))!.ocsps.length >= 3);
  });

  test('a CRL-only certificate: B-LT embeds the CRL', async () => {
    const crlOnly = await P12Signer.create(readFileSync(pki.crlOnlyP12), PKI_PASS);
    const sealed = await seal(pades('B-LT'), crlOnly);
    pdfsig(sealed);
    const dss = (await dssOf(sealed))!;
    assert.ok(dss.crls.length >= 1, 'a CRL in the DSS');
  });

  test('a revoked sealing certificate is refused, before the TSA is asked', async () => {
    const revoked = await P12Signer.create(readFileSync(pki.revokedP12), PKI_PASS);
    const before = pki.tsa.requests;
    await assert.rejects(seal(pades('B-LT'), revoked), /sealing certificate is revoked/);
    assert.equal(pki.tsa.requests, before);
  });

  test('a TSA that is down, then one that hangs, fails the seal; the second TSA is used when the first fails', async () => {
    pki.tsa.down = true;
    try {
      await assert.rejects(seal(pades('B-T')), /No timestamp authority answered.*HTTP 503/);
    } finally {
      pki.tsa.down = false;
    }
    pki.tsa.hang = true;
    try {
      const started = Date.now();
      await assert.rejects(seal(pades('B-T', { tsa: { urls: [pki.tsaUrl], headers: {}, timeoutMs: 300 } })), /did not answer within 300 ms|timed out/);
      assert.ok(Date.now() - started < 5_000);
    } finally {
      pki.tsa.hang = false;
    }
    const sealed = await seal(pades('B-T', { tsa: { urls: [`${pki.origin}/no-tsa-here`, pki.tsaUrl], headers: { authorization: 'Basic dTpw' }, timeoutMs: 5_000 } }));
    pdfsig(sealed);
    assert.equal(pki.tsa.lastAuthorization, 'Basic dTpw', 'the configured header reaches the TSA');
  });

  test('the sealer: B-LT over the self-signed development seal is sealed B-T and says so once', async () => {
    const dev = await loadSigner({ dataDir: path.join(tmp, 'dev') });
    const warnings: string[] = [];
    const config = loadConfig({ DATA_DIR: tmp, SIGNING_TSA_URL: pki.tsaUrl, SIGNING_PADES_LEVEL: 'B-LT', OPS_TOKEN: 'o'.repeat(32), JWT_SECRET: 'j'.repeat(64), SIGNING_LINK_SECRET: 's'.repeat(64) });
    const sealer = createSealer({ getSigner: async () => dev, signing: config.signing, limits: LIMITS, logger: { warn: (_o, msg) => void warnings.push(msg ?? '') } });
    const input = { original: doc.bytes, fields: [], hide: [], certificate: certificate() };
    const first = await sealer(input);
    await sealer(input);
    assert.equal(warnings.length, 1, 'one warning, not one per seal');
    assert.match(warnings[0], /sealed PAdES B-T/);
    pdfsig(first);
    assert.equal(await dssOf(first), undefined);
    const [range] = findSignedRanges(first);
    assert.ok(signatureParts(signatureContents(first, range)!).token, 'timestamped');
  });
});
