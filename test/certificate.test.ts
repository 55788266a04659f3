// test-lane: once (opens no database: the certificate page is built from data, sealed and read back)
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PDF, type P12Signer } from '@libpdf/core';
import { DEFAULT_CONSENT_TEXT } from '../src/modules/signing/consent-text.js';
import { readableTime, utcTime } from '../src/pdf/certificate.js';
import { sealDocument } from '../src/pdf/seal.js';
import type { CertificateData } from '../src/pdf/types.js';
import { loadSigner } from '../src/providers/certs/signer.js';
import * as fx from './fixtures/pdfs.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'signet-certificate-'));
let signer: P12Signer;
before(async () => {
  signer = (await loadSigner({ dataDir: path.join(tmp, 'data') })).signer;
});
after(() => rmSync(tmp, { recursive: true, force: true }));

function file(name: string, bytes: Uint8Array): string {
  const f = path.join(tmp, name);
  writeFileSync(f, bytes);
  return f;
}
const pdftotext = (bytes: Uint8Array, ...args: string[]) => execFileSync('pdftotext', ['-layout', ...args, file('t.pdf', bytes), '-'], { encoding: 'utf8' });
/** pdftotext's layout breaks lines where the page does: compare with spaces collapsed. */
const flat = (text: string) => text.replace(/\s+/g, ' ');
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36';

function data(recipients = 2): CertificateData {
  const names = ['Ana Lúcia Pereira', 'Bo Chen 陈波', 'Юлия Смирнова', 'Maximilian Alexander Konstantin von Hohenzollern-Sigmaringen-Brandenburg der Jüngere'];
  return {
    envelopeId: '7f3a9c2e-1111-4222-8333-944455556666',
    title: 'Master services agreement',
    documentSha256: 'a'.repeat(64),
    completedAt: '2025-03-01T12:00:05.000Z',
    senderName: 'Northwind Traders',
    sealLevel: 'B-T',
    tsaName: 'tsa.example.net',
    consent: { text: DEFAULT_CONSENT_TEXT, sha256: sha(DEFAULT_CONSENT_TEXT) },
    verificationUrl: 'https://signet.example/verify-document',
    recipients: Array.from({ length: recipients }, (_, i) => ({
      name: `${names[i % names.length]}${i >= names.length ? ` ${i + 1}` : ''}`,
      email: `r${i}@example.com`,
      role: i === 1 ? 'APPROVER' : 'SIGNER',
      status: 'SIGNED',
      ip: '203.0.113.7',
      userAgent: UA,
      viewedAt: '2025-03-01T11:50:00.000Z',
      signedAt: '2025-03-01T11:55:00.000Z',
      timeZone: i === 0 ? 'Europe/Paris' : null,
      ...(i === 0 ? { emailVerification: { verifiedAt: '2025-03-01T11:49:00.000Z' } } : {}),
      consent: { at: '2025-03-01T11:51:30.000Z', textSha256: sha(DEFAULT_CONSENT_TEXT) },
      actions: [
        { event: 'VIEWED', at: '2025-03-01T11:50:00.000Z', ip: '203.0.113.7', userAgent: UA },
        { event: 'CONSENTED', at: '2025-03-01T11:51:30.000Z', ip: '203.0.113.8', userAgent: UA },
        { event: i === 1 ? 'APPROVED' : 'SIGNED', at: '2025-03-01T11:55:00.000Z', ip: '2001:db8::1', userAgent: 'curl/8.5' },
      ],
    })),
    events: [
      { at: '2025-03-01T11:40:00.000Z', event: 'SENT', recipientEmail: null, ip: null },
      { at: '2025-03-01T11:51:30.000Z', event: 'CONSENTED', recipientEmail: 'r0@example.com', ip: '203.0.113.8' },
    ],
  };
}

async function sealed(certificate: CertificateData): Promise<Uint8Array> {
  return sealDocument({ original: await fx.plainPdf(1), fields: [], hide: [], certificate, signer });
}

/** Pages as PNGs for a person to look at (kept under SHOTS_DIR when it is set). */
function render(bytes: Uint8Array, name: string): void {
  const dir = process.env.SHOTS_DIR;
  if (!dir || spawnSync('pdftoppm', ['-v']).error) return;
  mkdirSync(dir, { recursive: true });
  execFileSync('pdftoppm', ['-png', '-r', '70', '-f', '2', file(`${name}.pdf`, bytes), path.join(dir, name)]);
}

describe('readable times', () => {
  test('UTC always named; the recipient’s own zone beside it when they gave one', () => {
    assert.equal(utcTime('2025-03-01T11:50:00.000Z'), '1 Mar 2025, 11:50:00 UTC');
    assert.equal(readableTime('2025-03-01T11:50:00.000Z', 'Europe/Paris'), '1 Mar 2025, 11:50:00 UTC (1 Mar 2025, 12:50:00 CET, Europe/Paris)');
    assert.equal(readableTime('2025-03-01T11:50:00.000Z', null), '1 Mar 2025, 11:50:00 UTC');
    // A zone this runtime does not know is left out rather than failing the seal.
    assert.equal(readableTime('2025-03-01T11:50:00.000Z', 'Mars/Olympus_Mons'), '1 Mar 2025, 11:50:00 UTC');
  });
});

describe('the certificate page', () => {
  test('shows the sender, readable times, each recipient’s actions with IP and user agent, the consent, the verification, the seal and the link', async () => {
    const pdf = await sealed(data());
    render(pdf, 'certificate');
    const cert = flat(pdftotext(pdf, '-f', '2'));
    for (const s of [
      'Sent by Northwind Traders',
      'Completed at 1 Mar 2025, 12:00:05 UTC',
      `Original SHA-256 ${'a'.repeat(64)}`,
      '/verify-document computes it',
      'PAdES B-T; its time is an RFC 3161 timestamp by tsa.example.net',
      'Verify this document at https://signet.example/verify-document',
      // Recipient 1: their zone, the email code, the consent with the text's hash, and each action.
      'Time zone Europe/Paris',
      'Email code sent to this address, confirmed 1 Mar 2025, 11:49:00 UTC (1 Mar 2025, 12:49:00 CET, Europe/Paris)',
      `Agreed to electronic records and signatures 1 Mar 2025, 11:51:30 UTC (1 Mar 2025, 12:51:30 CET, Europe/Paris); text SHA-256 ${sha(DEFAULT_CONSENT_TEXT)}`,
      'Viewed 1 Mar 2025, 11:50:00 UTC (1 Mar 2025, 12:50:00 CET, Europe/Paris)',
      'Consented 1 Mar 2025, 11:51:30 UTC',
      'IP 203.0.113.8;',
      'Chrome/124.0',
      'Signed 1 Mar 2025, 11:55:00 UTC',
      'IP 2001:db8::1; curl/8.5',
      // Recipient 2: no zone given, UTC only.
      'Approved 1 Mar 2025, 11:55:00 UTC IP',
      'Bo Chen 陈波',
      // The consent text itself, once, with its hash.
      'Consent to electronic records and signatures',
      'same legal effect as a handwritten signature',
      // The event log in UTC.
      '1 Mar 2025, 11:51:30 CONSENTED r0@example.com 203.0.113.8',
    ]) {
      assert.ok(cert.includes(s), `certificate lacks “${s}”:\n${cert}`);
    }
    assert.doesNotMatch(cert, /\d{4}-\d\d-\d\dT\d\d:\d\d/, 'no raw ISO time is left');
  });

  test('a B-B seal says its time is the server’s clock; a recipient with no consent says so', async () => {
    const d = data(1);
    const cert = flat(pdftotext(await sealed({ ...d, sealLevel: 'B-B', tsaName: null, recipients: [{ ...d.recipients[0], status: 'REJECTED', consent: null, actions: [] }] }), '-f', '2'));
    assert.ok(cert.includes("PAdES B-B; no trusted timestamp: the signing time is this server's clock"), cert);
    assert.ok(cert.includes('Consent Not given (declining needs none)'), cert);
  });

  test('forty recipients with long names break across pages without splitting a recipient, and every page is numbered', async () => {
    const pdf = await sealed(data(40));
    render(pdf, 'certificate-40');
    const pages = (await PDF.load(pdf)).getPageCount() - 1;
    assert.ok(pages >= 8, `${pages} certificate pages`);
    for (let p = 2; p <= pages + 1; p++) {
      const text = pdftotext(pdf, '-f', String(p), '-l', String(p));
      assert.ok(text.includes(`page ${p - 1} of ${pages}`), `page ${p} has no footer`);
      // A recipient block that starts on a page ends there: its name and its last action are together.
      const starts = [...text.matchAll(/^(\d+)\. /gm)].map((m) => Number(m[1]));
      for (const n of starts) assert.ok(flat(text).includes(`r${n - 1}@example.com`), `recipient ${n} split from its email on page ${p}`);
    }
    const all = flat(pdftotext(pdf, '-f', '2'));
    assert.ok(all.includes('Maximilian Alexander Konstantin von Hohenzollern-Sigmaringen-Brandenburg der Jüngere 40'), 'the long name is printed whole');
    assert.ok(all.includes('Юлия Смирнова 39'));
  });
});
