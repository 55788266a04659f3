// test-lane: once (opens no database)
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PDF, type P12Signer } from '@libpdf/core';
import forge from 'node-forge';
import { AppError } from '../src/errors.js';
import { closePdfWorkers, prepareDocument } from '../src/pdf/prepare.js';
import { sealDocument } from '../src/pdf/seal.js';
import type { CertificateData, Marker, PreparedDocument, StampField } from '../src/pdf/types.js';
import { DEV_P12_FILE, DEV_PASS_FILE, generateDevP12, loadSigner } from '../src/providers/certs/signer.js';
import * as fx from './fixtures/pdfs.js';

const LIMITS = { timeoutMs: 20_000, maxMemoryMb: 256 };
/** Small limits for the hostile inputs, so they fail fast. */
const TIGHT = { timeoutMs: 4_000, maxMemoryMb: 64 };

const tmp = mkdtempSync(path.join(tmpdir(), 'signet-pdf-test-'));
let signer: P12Signer;

before(async () => {
  signer = (await loadSigner({ dataDir: path.join(tmp, 'data') })).signer;
});
after(async () => {
  await closePdfWorkers();
  rmSync(tmp, { recursive: true, force: true });
});

const prepare = (parts: Uint8Array[], limits = LIMITS) => prepareDocument(parts, limits);
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

async function rejectsInvalid(p: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.code, 'INVALID_PDF');
    assert.match(err.message, message);
    return true;
  });
}

function file(name: string, bytes: Uint8Array): string {
  const f = path.join(tmp, name);
  writeFileSync(f, bytes);
  return f;
}

const pdftotext = (bytes: Uint8Array, ...args: string[]) => execFileSync('pdftotext', [...args, file('t.pdf', bytes), '-'], { encoding: 'utf8' });

type Word = { page: number; text: string; x0: number; y0: number; x1: number; y1: number };
/** poppler's word boxes, in points on the displayed page (origin top-left): an independent oracle. */
function popplerWords(bytes: Uint8Array): Word[] {
  const html = pdftotext(bytes, '-bbox');
  const words: Word[] = [];
  let page = 0;
  for (const line of html.split('\n')) {
    if (line.includes('<page ')) page++;
    const m = /<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*)<\/word>/.exec(line);
    if (m) words.push({ page, x0: +m[1], y0: +m[2], x1: +m[3], y1: +m[4], text: m[5].replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>') });
  }
  return words;
}

function checkSealed(bytes: Uint8Array): { signatures: number } {
  const f = file('sealed.pdf', bytes);
  const sig = spawnSync('pdfsig', [f], { encoding: 'utf8' });
  const blocks = sig.stdout.split(/Signature #\d+:/).slice(1);
  assert.ok(blocks.length >= 1, `pdfsig found no signature:\n${sig.stdout}${sig.stderr}`);
  for (const b of blocks) assert.match(b, /Signature Validation: Signature is Valid\./, sig.stdout);
  const last = blocks[blocks.length - 1];
  assert.match(last, /Total document signed/, sig.stdout);
  assert.match(last, /Signature Type: ETSI\.CAdES\.detached/);
  const qpdf = spawnSync('qpdf', ['--check', f], { encoding: 'utf8' });
  assert.equal(qpdf.status, 0, `qpdf --check failed:\n${qpdf.stdout}${qpdf.stderr}`);
  assert.match(qpdf.stdout, /No syntax or stream encoding errors found/);
  return { signatures: blocks.length };
}

function certificate(doc: PreparedDocument, events = 3): CertificateData {
  return {
    envelopeId: 'env_7f3a9c2e',
    title: 'Master services agreement',
    documentSha256: doc.sha256,
    completedAt: '2025-03-01T12:00:00.000Z',
    recipients: [
      { name: 'Ana Lúcia Pereira', email: 'ana@example.com', role: 'SIGNER', status: 'SIGNED', ip: '203.0.113.7', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36', viewedAt: '2025-03-01T11:50:00.000Z', signedAt: '2025-03-01T11:55:00.000Z' },
      { name: 'Bo Chen 陈波', email: 'bo.chen@example.org', role: 'APPROVER', status: 'SIGNED', ip: '2001:db8::1', userAgent: null, viewedAt: null, signedAt: '2025-03-01T12:00:00.000Z' },
    ],
    events: Array.from({ length: events }, (_, i) => ({ at: new Date(Date.UTC(2025, 2, 1, 11, i)).toISOString(), event: ['DOCUMENT_SENT', 'DOCUMENT_VIEWED', 'DOCUMENT_SIGNED'][i % 3], recipientEmail: i % 2 ? 'bo.chen@example.org' : 'ana@example.com', ip: i % 3 === 0 ? null : '203.0.113.7' })),
  };
}

/** Expected glyph box as a placement in percent, and a tolerance of 2 pt in percent. */
function near(actual: Marker, e: fx.ExpectedMarker): void {
  const tol = (2 / Math.min(e.pageSize.width, e.pageSize.height)) * 100;
  const want = { x: (e.box.x / e.pageSize.width) * 100, y: (e.box.top / e.pageSize.height) * 100, width: (e.box.width / e.pageSize.width) * 100, height: (e.box.height / e.pageSize.height) * 100 };
  for (const k of ['x', 'y', 'width', 'height'] as const) {
    assert.ok(Math.abs(actual[k] - want[k]) <= tol, `${e.text} on page ${e.page}: ${k} is ${actual[k].toFixed(3)}%, drawn at ${want[k].toFixed(3)}% (±${tol.toFixed(3)})`);
  }
}

describe('signing certificate', () => {
  test('generates a self-signed development P12 once (0600) and reuses it', async () => {
    const dir = path.join(tmp, 'certs');
    const first = await loadSigner({ dataDir: dir });
    assert.equal(first.generated, true);
    assert.equal(first.path, path.join(dir, DEV_P12_FILE));
    for (const f of [DEV_P12_FILE, DEV_PASS_FILE]) assert.equal(statSync(path.join(dir, f)).mode & 0o777, 0o600, f);
    const second = await loadSigner({ dataDir: dir });
    assert.equal(second.generated, false);
    assert.deepEqual(Buffer.from(second.signer.certificate), Buffer.from(first.signer.certificate));

    const cert = forge.pki.certificateFromAsn1(forge.asn1.fromDer(Buffer.from(first.signer.certificate).toString('binary')));
    assert.equal(cert.subject.getField('CN').value, 'Signet development seal');
    assert.equal(cert.issuer.getField('CN').value, 'Signet development seal');
    const usage = cert.getExtension('keyUsage') as { digitalSignature: boolean; nonRepudiation: boolean; keyCertSign?: boolean };
    assert.equal(usage.digitalSignature, true);
    assert.equal(usage.nonRepudiation, true);
    const years = (cert.validity.notAfter.getTime() - cert.validity.notBefore.getTime()) / (365.25 * 864e5);
    assert.ok(years > 9.9 && years < 10.1, `validity ${years} years`);
    assert.equal((cert.publicKey as forge.pki.rsa.PublicKey).n.bitLength(), 2048);
  });

  test('two starts at once generate one certificate; a P12 without its passphrase is not replaced', async () => {
    const dir = path.join(tmp, 'race');
    const [a, b] = await Promise.all([loadSigner({ dataDir: dir }), loadSigner({ dataDir: dir })]);
    assert.equal([a, b].filter((x) => x.generated).length, 1);
    assert.deepEqual(Buffer.from(a.signer.certificate), Buffer.from(b.signer.certificate));
    rmSync(path.join(dir, DEV_PASS_FILE));
    await assert.rejects(loadSigner({ dataDir: dir }), /without .*signing-cert\.pass/);
  });

  test("loads the operator's P12 with its passphrase, and says so when the passphrase is wrong", async () => {
    const p12 = path.join(tmp, 'operator.p12');
    writeFileSync(p12, generateDevP12('op-secret', 'Operator Seal'));
    const loaded = await loadSigner({ p12Path: p12, passphrase: 'op-secret', dataDir: path.join(tmp, 'unused') });
    assert.equal(loaded.generated, false);
    assert.equal(loaded.path, p12);
    await assert.rejects(loadSigner({ p12Path: p12, passphrase: 'wrong', dataDir: tmp }), /SIGNING_CERT_PASSPHRASE: does not open .*operator\.p12 \(wrong passphrase/);
  });
});

describe('prepareDocument', () => {
  test('one clean part keeps its bytes; page boxes are the displayed sizes', async () => {
    const plain = await fx.plainPdf(3);
    const copy = plain.slice();
    const doc = await prepare([plain]);
    assert.deepEqual(Buffer.from(doc.bytes), Buffer.from(copy));
    assert.equal(doc.sha256, sha256(copy));
    assert.equal(doc.info.pageCount, 3);
    assert.deepEqual(doc.info.pages[0], { width: 612, height: 792, rotation: 0 });
    assert.deepEqual(doc.markers, []);

    const mixed = await prepare([await fx.mixedSizesPdf()]);
    assert.deepEqual(mixed.info.pages, [
      { width: 595.28, height: 841.89, rotation: 0 },
      { width: 792, height: 612, rotation: 0 },
      { width: 792, height: 612, rotation: 90 },
    ]);
  });

  test('inherited MediaBox, /Rotate and resources are honoured', async () => {
    const doc = await prepare([fx.inheritedAttributesPdf()]);
    assert.deepEqual(doc.info.pages, [{ width: 842, height: 595, rotation: 90 }]);
    assert.equal(doc.markers.length, 1);
    assert.equal(doc.markers[0].type, 'SIGNATURE');
  });

  test('several parts are joined in order into one document', async () => {
    const a = await fx.plainPdf(2, 'First part');
    const b = (await fx.markersPdf()).bytes;
    const c = await fx.plainPdf(1, 'Third part');
    const doc = await prepare([a, b, c]);
    assert.equal(doc.info.pageCount, 2 + 7 + 1);
    assert.equal(doc.sha256, sha256(doc.bytes));
    const joined = await PDF.load(doc.bytes);
    assert.match(joined.getPage(0)!.extractText().text, /First part, page 1/);
    assert.match(joined.getPage(9)!.extractText().text, /Third part, page 1/);
    // Markers come with the pages of the part that carries them.
    assert.ok(doc.markers.length >= 12);
    assert.ok(doc.markers.every((m) => m.page >= 3 && m.page <= 9));
    assert.deepEqual(doc.info.pages[3], { width: 792, height: 612, rotation: 90 });
  });

  test('PDFs with a form, an existing signature, and from other producers', async (t) => {
    const form = await prepare([await fx.formPdf()]);
    assert.equal(form.info.pageCount, 1);
    assert.equal(form.markers.length, 1);

    const signed = await fx.signedPdf();
    const signedDoc = await prepare([signed.slice()]);
    // Kept byte for byte, so the earlier signature stays valid.
    assert.equal(signedDoc.sha256, sha256(signed));

    const chrome = fx.chromiumPdf();
    if (!chrome) return t.skip('no chromium on this machine');
    const variants: [string, Uint8Array | null][] = [
      ['chromium', chrome],
      ['qpdf --linearize', fx.qpdfPdf(chrome, ['--linearize'])],
      ['qpdf --object-streams=generate', fx.qpdfPdf(chrome, ['--object-streams=generate'])],
      ['pdftocairo', fx.cairoPdf(chrome)],
    ];
    for (const [name, bytes] of variants) {
      if (!bytes) continue;
      const doc = await prepare([bytes]);
      assert.equal(doc.info.pageCount, 1, name);
      assert.deepEqual(
        doc.markers.map((m) => `${m.type}/r${m.recipientIndex}`),
        ['SIGNATURE/r1', 'DATE/r1', 'INITIALS/r2', 'SIGNATURE/r2'],
        name,
      );
    }
  });

  test('PDFs from LibreOffice, LaTeX, ImageMagick and a PDF/A file, where the tool is installed', async (t) => {
    const producers: [string, () => Uint8Array | null, number][] = [
      ['LibreOffice', () => fx.libreOfficePdf(), 1],
      ['pdflatex', () => fx.latexPdf(), 0],
      ['ImageMagick', () => fx.imageMagickPdf(), 0],
      ['PDF/A (LibreOffice)', () => fx.pdfaPdf(), 1],
    ];
    for (const [name, make, markers] of producers) {
      await t.test(name, async (st) => {
        const bytes = make();
        if (!bytes) return st.skip(`${name} is not available on this machine`);
        const doc = await prepare([bytes]);
        assert.ok(doc.info.pageCount >= 1);
        assert.ok(doc.markers.length >= markers, `${doc.markers.length} markers`);
        const sealed = await sealDocument({ original: doc.bytes, fields: doc.markers.map((m) => ({ ...m, value: 'Ana Pereira' })), hide: doc.markers, certificate: certificate(doc), signer });
        checkSealed(sealed);
      });
    }
  });

  test('refuses what is not a PDF, damaged beyond repair, or encrypted; repairs a damaged tail', async () => {
    const plain = await fx.plainPdf(3);
    await rejectsInvalid(prepare([fx.notPdf()]), /not a PDF file/);
    await rejectsInvalid(prepare([new Uint8Array(0)]), /not a PDF file/);
    await rejectsInvalid(prepare([fx.truncate(plain, 0.05)]), /damaged beyond repair/);
    await rejectsInvalid(prepare([fx.truncate(plain, 0.3)]), /damaged beyond repair: it declares 3 pages but only \d can be read/);
    await rejectsInvalid(prepare([await fx.encryptedPdf('user-password')]), /encrypted/);
    await rejectsInvalid(prepare([await fx.encryptedPdf('owner-only')]), /encrypted/);
    // The failing part is named when there are several.
    await rejectsInvalid(prepare([await fx.plainPdf(1), fx.notPdf()]), /PDF part 2 is not a PDF/);

    // Losing only the xref and trailer is repairable: every page is there, the file is rewritten.
    const tail = fx.truncate(plain, 0.9);
    const repaired = await prepare([tail.slice()]);
    assert.equal(repaired.info.pageCount, 3);
    assert.notEqual(repaired.sha256, sha256(tail));
    assert.equal((await PDF.load(repaired.bytes)).recoveredViaBruteForce, false);
  });

  test('hostile files cost one bounded request: endless parse, decompression bomb, heap flood', async () => {
    const started = Date.now();
    // @libpdf/core loops on this content stream; the worker is stopped by the deadline or its heap limit.
    await rejectsInvalid(prepare([await fx.randomContentPdf(1)], TIGHT), /took longer than|more than 64 MB of memory/);
    // 128 MiB of inflated content from ~130 KB.
    await rejectsInvalid(prepare([await fx.deflateBombPdf(128)], TIGHT), /expands beyond the 64 MB limit/);
    await rejectsInvalid(prepare([await fx.glyphFloodPdf()], { ...TIGHT, timeoutMs: 20_000 }), /more than 64 MB of memory/);
    assert.ok(Date.now() - started < 30_000);
    // The pool replaced the dead workers.
    assert.equal((await prepare([await fx.plainPdf(1)], TIGHT)).info.pageCount, 1);
  });

  test('parts are moved, not copied, to the worker when asked', async () => {
    const bytes = new Uint8Array(await fx.imagePdf(2));
    const doc = await prepareDocument([bytes], { ...LIMITS, transfer: true });
    assert.equal(bytes.byteLength, 0, 'the caller’s buffer was transferred');
    assert.equal(doc.info.pageCount, 2);
    assert.equal(doc.sha256, sha256(doc.bytes));
  });
});

describe('markers', () => {
  test('found by their own glyph boxes, on rotated and cropped pages, split runs, several per line', async () => {
    const { bytes, expected } = await fx.markersPdf();
    const doc = await prepare([bytes]);
    assert.deepEqual(doc.badMarkers, []);
    assert.equal(doc.markers.length, expected.length, doc.markers.map((m) => `${m.page}:${m.text}`).join(', '));
    for (const e of expected) {
      const m = doc.markers.find((x) => x.page === e.page && x.type === e.type && x.recipientIndex === e.recipientIndex);
      assert.ok(m, `missing ${e.text} on page ${e.page}`);
      assert.equal(m.text, e.text);
      near(m, e);
    }
    // Reading order within a page: the two markers of the first line, left to right.
    assert.deepEqual(
      doc.markers.filter((m) => m.page === 1).map((m) => m.text).slice(0, 2),
      ['{{signature, r1}}', '{{date, r1}}'],
    );
  });

  test('malformed markers are reported with the reason; foreign placeholders are ignored', async () => {
    const doc = await prepare([await fx.badMarkersPdf()]);
    assert.deepEqual(doc.markers.map((m) => m.text), ['{{signature, r1}}']);
    const byText = Object.fromEntries(doc.badMarkers.map((b) => [b.text, b.reason]));
    assert.deepEqual(Object.keys(byText).sort(), ['{{checkbox, x2}}', '{{radio}}', '{{signatur, r1}}', '{{text, r0}}']);
    assert.match(byText['{{signatur, r1}}'], /unknown field type "signatur"/);
    assert.match(byText['{{checkbox, x2}}'], /malformed recipient "x2"/);
    assert.match(byText['{{radio}}'], /missing the recipient/);
    assert.match(byText['{{text, r0}}'], /numbered from r1/);
    assert.ok(doc.badMarkers.every((b) => b.page === 1));
  });

  test('50 pages: one marker per page, each where it was drawn', async () => {
    const { bytes, expected } = await fx.manyPagesPdf(50);
    const doc = await prepare([bytes]);
    assert.equal(doc.markers.length, 50);
    for (const e of expected) {
      const m = doc.markers.find((x) => x.page === e.page);
      assert.ok(m && m.type === e.type && m.recipientIndex === e.recipientIndex, `page ${e.page}`);
      near(m, e);
    }
  });

  test('boxes agree with poppler’s on a Chromium PDF (CID fonts)', async (t) => {
    const chrome = fx.chromiumPdf();
    if (!chrome) return t.skip('no chromium on this machine');
    const doc = await prepare([chrome]);
    const page = doc.info.pages[0];
    const words = popplerWords(chrome).filter((w) => w.page === 1);
    for (const m of doc.markers) {
      // The run of poppler words that spells the marker.
      let found: Word[] | undefined;
      for (let i = 0; i < words.length && !found; i++) {
        for (let j = i; j < words.length; j++) {
          const text = words.slice(i, j + 1).map((w) => w.text).join(' ');
          if (text === m.text) found = words.slice(i, j + 1);
          if (text.length >= m.text.length) break;
        }
      }
      assert.ok(found, `poppler does not see ${m.text}`);
      const x0 = Math.min(...found.map((w) => w.x0));
      const x1 = Math.max(...found.map((w) => w.x1));
      const y0 = Math.min(...found.map((w) => w.y0));
      const y1 = Math.max(...found.map((w) => w.y1));
      const pt = (pct: number, size: number) => (pct / 100) * size;
      assert.ok(Math.abs(pt(m.x, page.width) - x0) < 1, `${m.text} x`);
      assert.ok(Math.abs(pt(m.x + m.width, page.width) - x1) < 1, `${m.text} right`);
      assert.ok(Math.abs(pt(m.y, page.height) - y0) < 1, `${m.text} top`);
      assert.ok(Math.abs(pt(m.y + m.height, page.height) - y1) < 1, `${m.text} bottom`);
    }
  });
});

describe('sealDocument', () => {
  const VALUES: Record<string, string> = {
    DATE: '2025-03-01',
    TEXT: 'Net 30 days',
    NUMBER: '4217',
    DROPDOWN: 'Premium',
    RADIO: 'Annual',
    NAME: 'Bo Chen',
    EMAIL: 'ana@example.com',
    INITIALS: 'BC',
    SIGNATURE: 'Ana Pereira',
    CHECKBOX: 'true',
  };

  test('stamps every value where its marker was, removes the marker text, appends the certificate, and signs', async () => {
    const { bytes } = await fx.markersPdf();
    const doc = await prepare([bytes]);
    const fields: StampField[] = doc.markers.map((m) => {
      const field: StampField = { page: m.page, x: m.x, y: m.y, width: m.width, height: m.height, type: m.type, value: VALUES[m.type] };
      // One drawn signature (PNG with transparency), one uploaded (JPEG).
      if (m.text === '{{signature, r1}}') field.image = fx.signaturePng();
      if (m.text === '{{initials, r1}}') field.image = fx.SMALL_JPEG;
      return field;
    });
    const sealed = await sealDocument({ original: doc.bytes, fields, hide: doc.markers, certificate: certificate(doc, 120), signer });

    checkSealed(sealed);
    // An incremental update: the prepared document is still there, byte for byte.
    assert.deepEqual(Buffer.from(sealed.subarray(0, doc.bytes.length)), Buffer.from(doc.bytes));

    const text = pdftotext(sealed);
    for (const m of doc.markers) assert.ok(!text.includes(m.text), `marker ${m.text} still in the text`);
    assert.doesNotMatch(text, /\{\{\s*\w+\s*,\s*r\d+\s*\}\}/);
    // Not a marker: stays.
    assert.match(text, /\{\{ client_name \}\}/);
    for (const v of ['2025-03-01', 'Net 30 days', '4217', 'Premium', 'Annual', 'ana@example.com', 'Ana Pereira']) assert.ok(text.includes(v), `stamped "${v}" missing`);

    // Each stamped word sits inside its marker's box on the displayed page (rotated pages included).
    const words = popplerWords(sealed);
    const sealedPdf = await PDF.load(sealed);
    for (const m of doc.markers.filter((x) => ['NUMBER', 'DROPDOWN', 'RADIO', 'DATE'].includes(x.type))) {
      const size = doc.info.pages[m.page - 1];
      const first = VALUES[m.type].split(' ')[0];
      const w = words.find((x) => x.page === m.page && x.text === first);
      assert.ok(w, `${first} not found on page ${m.page}`);
      const box = { x0: (m.x / 100) * size.width, x1: ((m.x + m.width) / 100) * size.width, y0: (m.y / 100) * size.height, y1: ((m.y + m.height) / 100) * size.height };
      const cx = (w.x0 + w.x1) / 2;
      const cy = (w.y0 + w.y1) / 2;
      assert.ok(cx >= box.x0 && cx <= box.x1 && cy >= box.y0 && cy <= box.y1, `${first} at (${cx.toFixed(1)}, ${cy.toFixed(1)}) is outside ${JSON.stringify(box)} on page ${m.page}`);
    }
    const certPages = sealedPdf.getPageCount() - 7;
    assert.ok(certPages >= 2, 'the certificate continues over more pages for 120 events');

    // Both signature images are in the file: the PNG with its transparency mask, and the JPEG.
    const images = execFileSync('pdfimages', ['-list', file('img.pdf', sealed)], { encoding: 'utf8' });
    assert.match(images, /^\s+1\s+\d+\s+image\s+300\s+100\s.*$/m);
    assert.match(images, /^\s+1\s+\d+\s+smask\s+300\s+100\s/m);
    assert.match(images, /^\s+2\s+\d+\s+image\s+40\s+16\s.*jpeg/m);

    // The certificate.
    const cert = pdftotext(sealed, '-f', '8');
    assert.match(cert, /Certificate of completion/);
    assert.match(cert, /env_7f3a9c2e/);
    assert.match(cert, /Master services agreement/);
    assert.ok(cert.includes(doc.sha256), 'original SHA-256 on the certificate');
    for (const s of ['ana@example.com', 'bo.chen@example.org', 'Ana Lúcia Pereira', 'APPROVER', '203.0.113.7', '2001:db8::1', 'Chrome/124.0', '1 Mar 2025, 11:55:00 UTC', 'DOCUMENT_VIEWED']) {
      assert.ok(cert.includes(s), `certificate lacks ${s}`);
    }
    assert.match(cert, /Bo Chen 陈波/, 'characters outside WinAnsi print as written (test/pdf-unicode.test.ts has more)');
    assert.ok(cert.includes(`page ${certPages} of ${certPages}`));
    // Every event is listed, the last one too.
    assert.ok(cert.includes('1 Mar 2025, 12:59:00'), 'the last event, in UTC');
    assert.equal(cert.match(/DOCUMENT_(SENT|VIEWED|SIGNED)/g)?.length, 120);
  });

  test('a Chromium PDF (CID fonts): marker text removed, values stamped, valid seal', async (t) => {
    const chrome = fx.chromiumPdf();
    if (!chrome) return t.skip('no chromium on this machine');
    const doc = await prepare([chrome]);
    const fields: StampField[] = doc.markers.map((m) => ({ ...m, value: m.type === 'DATE' ? '2025-03-01' : `Stamped-${m.recipientIndex}` }));
    const sealed = await sealDocument({ original: doc.bytes, fields, hide: doc.markers, certificate: certificate(doc), signer });
    checkSealed(sealed);
    const text = pdftotext(sealed, '-l', '1');
    assert.doesNotMatch(text, /\{\{/);
    assert.match(text, /Client signature:/);
    assert.match(text, /Stamped-1/);
    assert.match(text, /Stamped-2/);
    assert.match(text, /Ünïcödé text/);
  });

  test('a form is flattened (values kept, fields gone); an earlier signature stays valid', async () => {
    const form = await prepare([await fx.formPdf()]);
    const sealedForm = await sealDocument({ original: form.bytes, fields: [{ ...form.markers[0], value: 'Ana Pereira' }], hide: form.markers, certificate: certificate(form), signer });
    checkSealed(sealedForm);
    assert.match(pdftotext(sealedForm), /Form Filled Value/);
    const fields = (await PDF.load(sealedForm)).getForm()?.getFields() ?? [];
    assert.deepEqual(
      fields.filter((f) => f.type !== 'signature').map((f) => f.name),
      [],
    );

    const signed = await prepare([await fx.signedPdf()]);
    const sealedSigned = await sealDocument({ original: signed.bytes, fields: [{ page: 2, x: 10, y: 10, width: 30, height: 4, type: 'NAME', value: 'Ana Pereira' }], hide: [], certificate: certificate(signed), signer });
    assert.equal(checkSealed(sealedSigned).signatures, 2);
  });

  test('inherited resources survive stamping', async () => {
    const doc = await prepare([fx.inheritedAttributesPdf()]);
    const sealed = await sealDocument({ original: doc.bytes, fields: [{ ...doc.markers[0], value: 'Ana Pereira' }], hide: doc.markers, certificate: certificate(doc), signer });
    checkSealed(sealed);
    const text = pdftotext(sealed, '-l', '1');
    assert.match(text, /Inherited/);
    assert.match(text, /here/);
    assert.match(text, /Ana Pereira/);
    assert.doesNotMatch(text, /\{\{/);
  });

  test('a drawn signature PNG is embedded losslessly, its transparency as a soft mask', async () => {
    const doc = await prepare([await fx.plainPdf(1)]);
    const { png, rgba } = fx.signatureImage();
    const sealed = await sealDocument({ original: doc.bytes, fields: [{ page: 1, x: 10, y: 10, width: 40, height: 10, type: 'SIGNATURE', value: null, image: png }], hide: [], certificate: certificate(doc), signer });
    checkSealed(sealed);
    const prefix = path.join(tmp, 'img');
    execFileSync('pdfimages', ['-f', '1', '-l', '1', file('sig.pdf', sealed), prefix]);
    const payload = (name: string) => {
      const bytes = readFileSync(`${prefix}-${name}`);
      // Netpbm: magic, width, height, maxval, one whitespace byte, then the samples.
      const header = /^P[56]\s+(\d+)\s+(\d+)\s+(\d+)\s/.exec(bytes.toString('latin1', 0, 40));
      assert.ok(header, name);
      return bytes.subarray(header[0].length);
    };
    const n = 300 * 100;
    const rgb = Buffer.alloc(n * 3);
    // pdfimages writes the soft mask as a PPM too, each grey level repeated three times.
    const alpha = Buffer.alloc(n * 3);
    for (let i = 0; i < n; i++) {
      rgb.set(rgba.subarray(i * 4, i * 4 + 3), i * 3);
      alpha.fill(rgba[i * 4 + 3], i * 3, i * 3 + 3);
    }
    assert.ok(payload('000.ppm').equals(rgb), 'colour samples differ');
    assert.ok(payload('001.ppm').equals(alpha), 'alpha samples differ');
  });

  test('fields on a missing page are refused', async () => {
    const doc = await prepare([await fx.plainPdf(1)]);
    await assert.rejects(sealDocument({ original: doc.bytes, fields: [{ page: 2, x: 1, y: 1, width: 1, height: 1, type: 'TEXT', value: 'x' }], hide: [], certificate: certificate(doc), signer }), /page 2/);
  });
});

describe('the worker also runs compiled (dist/*.js)', () => {
  test('prepareDocument from tsc output under plain node', () => {
    const out = path.resolve('node_modules/.cache/signet-pdf-build');
    rmSync(out, { recursive: true, force: true });
    execFileSync(
      'npx',
      ['tsc', '--outDir', out, '--rootDir', 'src', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--strict', '--skipLibCheck', '--esModuleInterop', 'src/pdf/prepare.ts', 'src/pdf/prepare-worker.ts'],
      { stdio: 'pipe' },
    );
    const script = `
      const { prepareDocument, closePdfWorkers } = await import(${JSON.stringify(path.join(out, 'pdf/prepare.js'))});
      const { PDF } = await import('@libpdf/core');
      const pdf = PDF.create();
      pdf.addPage({ size: 'letter' }).drawText('Compiled {{signature, r1}}', { x: 72, y: 700 });
      const doc = await prepareDocument([await pdf.save()], { timeoutMs: 10000, maxMemoryMb: 128 });
      console.log(JSON.stringify({ pages: doc.info.pageCount, markers: doc.markers.map((m) => m.type) }));
      await closePdfWorkers();`;
    const res = execFileSync('node', ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: process.cwd() });
    assert.deepEqual(JSON.parse(res.trim()), { pages: 1, markers: ['SIGNATURE'] });
    rmSync(out, { recursive: true, force: true });
  });
});
