// test-lane: once (opens no database: the certificate page is built from data, sealed and read back)
/**
 * The certificate page in the account's language (issue 37, item 6): one language per certificate,
 * dates in that language with each recipient's own zone beside UTC; German read back with pdftotext
 * with no English label left; Arabic mirrored right to left and Chinese drawn in their fonts (PNGs under
 * SHOTS_DIR for a person to look at).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PDF, type P12Signer } from '@libpdf/core';
import { allMessages } from '../src/i18n/catalogue.js';
import type { Locale } from '../src/i18n/locales.js';
import { readableTime, utcTime } from '../src/pdf/certificate.js';
import { sealDocument } from '../src/pdf/seal.js';
import type { CertificateData } from '../src/pdf/types.js';
import { loadSigner } from '../src/providers/certs/signer.js';
import * as fx from './fixtures/pdfs.js';

const tmp = mkdtempSync(path.join(tmpdir(), 'signet-certificate-i18n-'));
let signer: P12Signer;
before(async () => {
  signer = (await loadSigner({ dataDir: path.join(tmp, 'data') })).signer;
});
after(() => rmSync(tmp, { recursive: true, force: true }));

const file = (name: string, bytes: Uint8Array) => {
  const f = path.join(tmp, name);
  writeFileSync(f, bytes);
  return f;
};
const text = (bytes: Uint8Array) => execFileSync('pdftotext', ['-layout', '-f', '2', file('t.pdf', bytes), '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
function render(bytes: Uint8Array, name: string): void {
  const dir = process.env.SHOTS_DIR;
  if (!dir || spawnSync('pdftoppm', ['-v']).error) return;
  mkdirSync(dir, { recursive: true });
  execFileSync('pdftoppm', ['-png', '-r', '80', '-f', '2', file(`${name}.pdf`, bytes), path.join(dir, name)]);
}

const UA = 'Mozilla/5.0 (X11; Linux x86_64) Chrome/124.0';
function data(locale: Locale): CertificateData {
  return {
    envelopeId: '7f3a9c2e-1111-4222-8333-944455556666',
    title: locale === 'ar' ? 'اتفاقية الخدمات' : 'Rahmenvertrag',
    documentSha256: 'a'.repeat(64),
    completedAt: '2025-03-01T12:00:05.000Z',
    senderName: 'Northwind GmbH',
    sealLevel: 'B-T',
    tsaName: 'tsa.example.net',
    consent: { text: 'Ich bin einverstanden.', sha256: 'b'.repeat(64) },
    verificationUrl: 'https://signet.example/verify-document',
    test: true,
    locale,
    recipients: [
      { name: 'Anna Schmidt', email: 'anna@example.com', role: 'SIGNER', status: 'SIGNED', ip: '203.0.113.7', userAgent: UA, viewedAt: null, signedAt: null, timeZone: 'Europe/Berlin', emailVerification: { verifiedAt: '2025-03-01T11:49:00.000Z' }, consent: { at: '2025-03-01T11:51:30.000Z', textSha256: 'b'.repeat(64) }, actions: [{ event: 'VIEWED', at: '2025-03-01T11:50:00.000Z', ip: '203.0.113.7', userAgent: UA }, { event: 'SIGNED', at: '2025-03-01T11:55:00.000Z', ip: '203.0.113.7', userAgent: UA }] },
      { name: 'عمر الفاروق 陈波', email: 'omar@example.com', role: 'APPROVER', status: 'SIGNED', ip: '2001:db8::1', userAgent: 'curl/8.5', viewedAt: null, signedAt: null, timeZone: null, consent: null, actions: [{ event: 'APPROVED', at: '2025-03-01T11:56:00.000Z', ip: '2001:db8::1', userAgent: 'curl/8.5' }] },
      { name: 'Viewer', email: 'v@example.com', role: 'VIEWER', status: 'PENDING', ip: null, userAgent: null, viewedAt: null, signedAt: null, consent: null, actions: [] },
    ],
    events: [
      { at: '2025-03-01T11:40:00.000Z', event: 'SENT', recipientEmail: null, ip: null },
      { at: '2025-03-01T11:55:00.000Z', event: 'SIGNED', recipientEmail: 'anna@example.com', ip: '203.0.113.7' },
    ],
  };
}
const sealed = async (c: CertificateData) => sealDocument({ original: await fx.plainPdf(1), fields: [], hide: [], certificate: c, signer });

describe('the certificate in the account’s language', () => {
  test('times in the language, UTC named, the recipient’s zone beside it; English as before', () => {
    assert.equal(utcTime('2025-03-01T11:50:00.000Z', 'de'), '1. März 2025, 11:50:00 UTC');
    assert.equal(readableTime('2025-03-01T11:50:00.000Z', 'Europe/Berlin', 'de'), '1. März 2025, 11:50:00 UTC (1. März 2025, 12:50:00 MEZ, Europe/Berlin)');
    assert.equal(readableTime('2025-03-01T11:50:00.000Z', 'Europe/Berlin'), '1 Mar 2025, 11:50:00 UTC (1 Mar 2025, 12:50:00 CET, Europe/Berlin)');
  });

  test('German: every label German, no English label left (pdftotext)', async () => {
    const pdf = await sealed(data('de'));
    render(pdf, 'certificate-de');
    const cert = text(pdf);
    for (const s of [
      'Abschlusszertifikat',
      'TEST - dieser Umschlag wurde im Testmodus gesendet.',
      'Gesendet von Northwind GmbH',
      'Abgeschlossen am 1. März 2025, 12:00:05 UTC',
      'PAdES B-T; die Zeit ist ein RFC-3161-Zeitstempel von tsa.example.net',
      'Prüfen Sie dieses Dokument unter https://signet.example/verify-document',
      'Empfänger (3)',
      'Rolle Unterzeichner; unterschrieben',
      'E-Mail-Code an diese Adresse gesendet, bestätigt 1. März 2025, 11:49:00 UTC (1. März 2025, 12:49:00 MEZ, Europe/Berlin)',
      'Angesehen 1. März 2025, 11:50:00 UTC',
      'Rolle Genehmiger; unterschrieben',
      'Genehmigt 1. März 2025, 11:56:00 UTC',
      'Nicht gefragt: nichts zu unterschreiben',
      'Aktionen Keine',
      'Ereignisprotokoll (2, Zeiten in UTC)',
      'Umschlag 7f3a9c2e-1111-4222-8333-944455556666 - Prüfzertifikat, Seite 1 von',
    ]) {
      assert.ok(cert.includes(s), `missing: ${s}\n${cert}`);
    }
    const english = Object.entries(allMessages().get('en')!)
      .filter(([key]) => key.startsWith('certificate.'))
      .map(([, m]) => m)
      .filter((m) => !/[{}]/.test(m) && m.length > 4 && !['Status'].includes(m));
    const left = english.filter((m) => cert.includes(m) && !Object.values(allMessages().get('de')!).includes(m));
    assert.deepEqual(left, [], 'English labels on a German certificate');
  });

  test('Arabic is mirrored right to left and Chinese draws its own characters', async () => {
    for (const locale of ['ar', 'zh-CN'] as const) {
      const pdf = await sealed(data(locale));
      render(pdf, `certificate-${locale}`);
      const cert = text(pdf);
      assert.ok(cert.includes(locale === 'ar' ? 'anna@example.com' : '完成证书'), cert);
      // The labels' glyphs are embedded (no "?" stand-ins for missing characters).
      assert.doesNotMatch(cert, /\?{2,}/);
      const doc = await PDF.load(pdf);
      assert.equal(doc.getPageCount() >= 2, true);
    }
    // Mirrored: an Arabic certificate's title line ends at the right margin, a German one starts at the left.
    const titleLine = async (locale: Locale) => {
      const html = execFileSync('pdftotext', ['-bbox', '-f', '2', '-l', '2', file(`b-${locale}.pdf`, await sealed(data(locale))), '-'], { encoding: 'utf8' });
      const words = [...html.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)"/g)].map((m) => ({ xMin: Number(m[1]), yMin: Number(m[2]), xMax: Number(m[3]) }));
      const top = Math.min(...words.map((w) => w.yMin));
      const line = words.filter((w) => w.yMin - top < 5);
      return { left: Math.min(...line.map((w) => w.xMin)), right: Math.max(...line.map((w) => w.xMax)) };
    };
    const ar = await titleLine('ar');
    const de = await titleLine('de');
    assert.ok(ar.right > 540 && ar.left > 300, `Arabic title at ${JSON.stringify(ar)}`);
    assert.ok(de.left < 60 && de.right < 300, `German title at ${JSON.stringify(de)}`);
  });
});
