// test-lane: once (opens no database)
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PDF, type P12Signer } from '@libpdf/core';
import { shapeArabic } from '../src/pdf/arabic.js';
import { documentFont, runsOf } from '../src/pdf/fonts.js';
import { closePdfWorkers, prepareDocument } from '../src/pdf/prepare.js';
import { sealDocument } from '../src/pdf/seal.js';
import { visualLine } from '../src/pdf/text.js';
import type { CertificateData, PreparedDocument, StampField } from '../src/pdf/types.js';
import { loadSigner } from '../src/providers/certs/signer.js';
import * as fx from './fixtures/pdfs.js';

/** Names and values in five scripts: Latin with Polish letters, Greek, Cyrillic, Chinese, Arabic. */
const NAMES = ['Łukasz Żółć', 'Ελένη Παπαδοπούλου', 'Юлия Смирнова', '王芳', 'محمد'];
const LIMITS = { timeoutMs: 20_000, maxMemoryMb: 256 };

const tmp = mkdtempSync(path.join(tmpdir(), 'signet-pdf-unicode-'));
let signer: P12Signer;
before(async () => {
  signer = (await loadSigner({ dataDir: path.join(tmp, 'data') })).signer;
});
after(async () => {
  await closePdfWorkers();
  rmSync(tmp, { recursive: true, force: true });
});

function file(name: string, bytes: Uint8Array): string {
  const f = path.join(tmp, name);
  writeFileSync(f, bytes);
  return f;
}
const pdftotext = (bytes: Uint8Array, ...args: string[]) => execFileSync('pdftotext', [...args, file('t.pdf', bytes), '-'], { encoding: 'utf8' });
/**
 * poppler gives the Arabic presentation forms we draw (ﻣﺤﻤﺪ) back in logical order, wrapped in
 * embedding marks (RLE … PDF): NFKC folds the forms into the letters as typed (محمد), and the marks
 * go. Everything else is compared as extracted.
 */
const readable = (text: string) => text.normalize('NFKC').replace(/[\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '');

function certificate(doc: PreparedDocument): CertificateData {
  return {
    envelopeId: 'env_unicode',
    title: 'Umowa — Συμφωνία — Договор — 协议 — اتفاقية',
    documentSha256: doc.sha256,
    completedAt: '2025-03-01T12:00:00.000Z',
    recipients: NAMES.map((name, i) => ({
      name,
      email: `r${i}@example.com`,
      role: 'SIGNER',
      status: 'SIGNED',
      ip: '203.0.113.7',
      userAgent: 'Mozilla/5.0',
      viewedAt: '2025-03-01T11:50:00.000Z',
      signedAt: '2025-03-01T11:55:00.000Z',
    })),
    events: [{ at: '2025-03-01T11:55:00.000Z', event: 'DOCUMENT_SIGNED', recipientEmail: 'r4@example.com', ip: null }],
    verificationUrl: 'https://signet.example/verify-document',
  };
}

/** Per name: a NAME field and a typed signature, one row each, down the page. */
function fieldsFor(names: string[]): StampField[] {
  return names.flatMap((name, i): StampField[] => [
    { page: 1, x: 8, y: 20 + i * 12, width: 40, height: 4, type: 'NAME', value: name },
    { page: 1, x: 52, y: 18 + i * 12, width: 40, height: 7, type: 'SIGNATURE', value: name },
  ]);
}

function checkSealed(bytes: Uint8Array): void {
  const f = file('sealed.pdf', bytes);
  const sig = spawnSync('pdfsig', [f], { encoding: 'utf8' });
  assert.match(sig.stdout, /Signature Validation: Signature is Valid\./, sig.stdout + sig.stderr);
  assert.match(sig.stdout, /Total document signed/);
  const qpdf = spawnSync('qpdf', ['--check', f], { encoding: 'utf8' });
  assert.equal(qpdf.status, 0, qpdf.stdout + qpdf.stderr);
}

describe('Unicode on the sealed PDF', () => {
  test('names in five scripts are stamped and on the certificate, with the verification URL; the seal is valid and the fonts are subsets', async () => {
    const doc = await prepareDocument([await fx.plainPdf(1)], LIMITS);
    const sealed = await sealDocument({ original: doc.bytes, fields: fieldsFor(NAMES), hide: [], certificate: certificate(doc), signer });
    checkSealed(sealed);

    const stamped = readable(pdftotext(sealed, '-f', '1', '-l', '1'));
    for (const name of NAMES) assert.equal(stamped.split(name).length - 1, 2, `"${name}" should be stamped twice (name and typed signature):\n${stamped}`);

    const cert = readable(pdftotext(sealed, '-f', '2'));
    for (const name of NAMES) assert.ok(cert.includes(name), `certificate lacks ${name}:\n${cert}`);
    assert.ok(cert.includes('Umowa — Συμφωνία — Договор — 协议 — اتفاقية'), `title:\n${cert}`);
    assert.match(cert, /Verify this document at https:\/\/signet\.example\/verify-document/);
    assert.doesNotMatch(stamped + cert, /\?/, 'no character fell back to "?"');

    // The URL is a link, and every font is an embedded subset with a ToUnicode map.
    const links = (await PDF.load(sealed)).getPage(1)!.getAnnotations().filter((a) => a.type === 'Link');
    assert.equal(links.length, 1);
    // (pdffonts complains about the signature widget of any signed PDF on stderr: not ours to show.)
    const fonts = execFileSync('pdffonts', [file('fonts.pdf', sealed)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n').slice(2).filter(Boolean);
    const embedded = fonts.filter((l) => /CID TrueType/.test(l));
    assert.deepEqual(embedded.map((l) => l.split(/\s+/)[0].replace(/^[A-Z]{6}\+/, '')).sort(), ['DejaVuSansCondensed', 'DejaVuSansCondensed-Bold', 'DejaVuSerifCondensed-BoldItalic', 'NotoSansSC-Regular']);
    for (const l of embedded) assert.match(l, /yes\s+yes\s+yes/, `not an embedded subset with ToUnicode: ${l}`);
  });

  test('subsetting bounds the growth: the fonts add tens of kilobytes, not megabytes; Latin-1 embeds none', async () => {
    const doc = await prepareDocument([await fx.plainPdf(1)], LIMITS);
    const ascii = await sealDocument({ original: doc.bytes, fields: fieldsFor(['Ana Pereira']), hide: [], certificate: { ...certificate(doc), title: 'Agreement', recipients: certificate(doc).recipients.slice(0, 1).map((r) => ({ ...r, name: 'Ana Pereira' })) }, signer });
    const all = await sealDocument({ original: doc.bytes, fields: fieldsFor(NAMES), hide: [], certificate: certificate(doc), signer });
    const kb = (n: number) => Math.round(n / 1024);
    // DejaVu Sans Condensed alone is 660 KB and Noto Sans SC 10 MB: whole fonts would be megabytes.
    assert.ok(ascii.length - doc.bytes.length < 60 * 1024, `ASCII values grew the document by ${kb(ascii.length - doc.bytes.length)} KB`);
    assert.ok(all.length - doc.bytes.length < 120 * 1024, `five scripts grew the document by ${kb(all.length - doc.bytes.length)} KB`);
    const fonts = execFileSync('pdffonts', [file('ascii.pdf', ascii)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    assert.doesNotMatch(fonts, /CID TrueType/, 'a Latin-1 document is drawn in the standard fonts, as before');
  });

  test('Arabic is shaped (joined forms), drawn right to left, and right-aligned in its box', async () => {
    assert.equal(shapeArabic('محمد'), '\ufee3\ufea4\ufee4\ufeaa', 'initial meem, medial hah, medial meem, final dal');
    assert.equal(shapeArabic('سلام'), '\ufeb3\ufefc\ufee1', 'lam + alef become one ligature');
    assert.equal(shapeArabic('Ali'), 'Ali');

    const alone = visualLine('محمد', 'regular', 'auto');
    assert.equal(alone.text, '\ufeaa\ufee4\ufea4\ufee3');
    assert.equal(alone.rtl, true);
    // On our left-to-right certificate lines, a number before a name stays on the left.
    assert.equal(visualLine('1. محمد', 'bold').text, '1. \ufeaa\ufee4\ufea4\ufee3');
    assert.equal(visualLine('Ali (محمد) 12', 'regular').text, 'Ali (\ufeaa\ufee4\ufea4\ufee3) 12');
    // A right-to-left override in a name cannot reorder the certificate's text; joiners leave no box behind.
    assert.equal(visualLine('Eve \u202eevil', 'regular').text, 'Eve evil');
    assert.equal(visualLine('می\u200cخواهم', 'regular', 'auto').text, '\ufee2\ufeeb\ufe8d\ufeee\ufea7\ufbfd\ufee3', 'no join across the zero-width non-joiner');

    const doc = await prepareDocument([await fx.plainPdf(1)], LIMITS);
    const field: StampField = { page: 1, x: 10, y: 30, width: 60, height: 5, type: 'TEXT', value: 'محمد' };
    const sealed = await sealDocument({ original: doc.bytes, fields: [field], hide: [], certificate: certificate(doc), signer });
    const bbox = pdftotext(sealed, '-bbox', '-f', '1', '-l', '1');
    // -bbox lists the glyphs as they lie on the page, left to right: the name reversed.
    const word = [...bbox.matchAll(/<word xMin="([\d.]+)" yMin="[\d.]+" xMax="([\d.]+)"[^>]*>(.*)<\/word>/g)].find((m) => readable(m[3]) === 'دمحم');
    assert.ok(word, bbox);
    const pageWidth = doc.info.pages[0].width;
    const right = ((field.x + field.width) / 100) * pageWidth;
    assert.ok(Math.abs(Number(word[2]) - right) < 4, `ends at ${word[2]}, the box at ${right.toFixed(1)}`);
  });

  test('a Latin-1 line stays in its standard font; otherwise each character goes to a font that has it; one no font has becomes "?"', () => {
    assert.deepEqual(runsOf('Ana Lúcia Pereira — 2025', 'regular'), [{ text: 'Ana Lúcia Pereira — 2025', standard: 'Helvetica' }]);
    assert.deepEqual(runsOf('Ana Pereira', 'script'), [{ text: 'Ana Pereira', standard: 'Times-BoldItalic' }]);
    assert.deepEqual(runsOf('Юлия 王芳 (Wang)', 'regular'), [
      { text: 'Юлия ', file: 'sans' },
      { text: '王芳 ', file: 'cjk' },
      { text: '(Wang)', file: 'sans' },
    ]);
    assert.deepEqual(runsOf('김 Kim', 'regular'), [{ text: '? Kim', file: 'sans' }]);
    // Typed signatures: DejaVu Serif has no Arabic, so an Arabic name is in DejaVu Sans Bold.
    assert.deepEqual(runsOf('Ali محمد 12', 'script'), [
      { text: 'Ali ', file: 'serifBoldItalic' },
      { text: 'محمد ', file: 'sansBold' },
      { text: '12', file: 'serifBoldItalic' },
    ]);
  });

  test('fonts are parsed once per process and shared by every document', () => {
    const a = documentFont(PDF.create(), 'regular');
    const b = documentFont(PDF.create(), 'regular');
    assert.notEqual(a, b, 'each document has its own font object (its own subset)');
    // Each has its own program wrapper around the one parsed TrueType font.
    const parsed = (f: typeof a) => (f.program as unknown as { font: unknown }).font;
    assert.ok(parsed(a) && parsed(a) === parsed(b), 'both use the one parsed font');
  });
});
