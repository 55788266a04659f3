// test-lane: once (opens no database)
/**
 * Every stream filter's output is bounded while an untrusted PDF is read, not only Flate's:
 * LZWDecode and RunLengthDecode bombs (encoders below) are refused with INVALID_PDF and a reason,
 * while ordinary LZW and RunLength streams still read. A page whose content streams cannot be
 * decoded refuses the file, naming the page; LZW reads as other tools write it.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { constants as zc, deflateSync } from 'node:zlib';
import { PDF, PdfArray, PdfDict, PdfName, PdfNumber } from '@libpdf/core';
import { AppError } from '../src/errors.js';
import { closePdfWorkers, prepareDocument } from '../src/pdf/prepare.js';
import * as fx from './fixtures/pdfs.js';

const TIGHT = { timeoutMs: 15_000, maxMemoryMb: 64 };

after(() => closePdfWorkers());

/**
 * MSB-first bit writer with PDF's LZW code widths (EarlyChange 1), counted as the decoder counts:
 * its table is one entry behind the encoder's, so it reads 10-bit codes once its next entry is 511.
 */
class Codes {
  private readonly bytes: number[] = [];
  private acc = 0;
  private bits = 0;
  width = 9;
  next = 258;
  write(code: number): void {
    this.acc = (this.acc << this.width) | code;
    this.bits += this.width;
    while (this.bits >= 8) {
      this.bits -= 8;
      this.bytes.push((this.acc >>> this.bits) & 0xff);
    }
    this.acc &= (1 << this.bits) - 1;
  }
  /** A code was read after the first: the decoder adds an entry and may widen its codes. */
  added(): void {
    if (this.next >= 4096) return;
    this.next++;
    if (this.next === 511) this.width = 10;
    else if (this.next === 1023) this.width = 11;
    else if (this.next === 2047) this.width = 12;
  }
  end(): Uint8Array {
    this.write(257);
    if (this.bits) this.bytes.push((this.acc << (8 - this.bits)) & 0xff);
    return Uint8Array.from(this.bytes);
  }
}

/** LZW of plain bytes (no dictionary growth exploited): each byte one code. */
function lzwLiteral(data: Uint8Array): Uint8Array {
  const c = new Codes();
  // A clear code every so often keeps the decoder's table (and so the code width) small.
  data.forEach((b, i) => {
    if (i % 200 === 0) {
      c.write(256);
      c.width = 9;
      c.next = 258;
    } else c.added();
    c.write(b);
  });
  return c.end();
}

/**
 * LZW of `mb` MiB of one byte: codes 258, 259, ... name ever longer runs (the decoder's KwKwK case),
 * then the longest entry (3839 bytes) is repeated: about 2500:1.
 */
function lzwBomb(mb: number, byte = 0x20): Uint8Array {
  const c = new Codes();
  let out = 0;
  const want = mb * 1024 * 1024;
  c.write(byte);
  out += 1;
  for (let code = 258; code < 4096 && out < want; code++) {
    c.write(code);
    c.added();
    out += code - 256;
  }
  while (out < want) {
    c.write(4095);
    c.added();
    out += 4095 - 256;
  }
  return c.end();
}

function runLength(data: Uint8Array): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < data.length; i += 128) {
    const chunk = data.subarray(i, i + 128);
    out.push(chunk.length - 1, ...chunk);
  }
  out.push(128);
  return Uint8Array.from(out);
}

/** RunLength of `mb` MiB of one byte: 2 bytes for every 128 (64:1). */
function runLengthBomb(mb: number, byte = 0x20): Uint8Array {
  const runs = Math.ceil((mb * 1024 * 1024) / 128);
  const out = new Uint8Array(runs * 2 + 1);
  for (let i = 0; i < runs; i++) {
    out[i * 2] = 129;
    out[i * 2 + 1] = byte;
  }
  out[runs * 2] = 128;
  return out;
}

/** A one-page PDF whose content stream is `data` under `filter` (with optional DecodeParms). */
async function pdfWithContent(filter: string, data: Uint8Array, parms?: Record<string, number>): Promise<Uint8Array> {
  const pdf = PDF.create();
  const page = pdf.addPage({ size: 'letter' });
  const dict: Record<string, PdfName | PdfDict> = { Filter: PdfName.of(filter) };
  if (parms) dict.DecodeParms = new PdfDict(Object.entries(parms).map(([k, v]) => [k, PdfNumber.of(v)] as [string, PdfNumber]));
  page.dict.set('Contents', pdf.createStream(dict, data));
  return pdf.save({ compressStreams: false });
}

async function rejectsBomb(p: Promise<unknown>, limitMb = 64): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.code, 'INVALID_PDF');
    assert.match(err.message, new RegExp(`expands beyond the ${limitMb} MB limit`));
    return true;
  });
}

describe('every PDF filter is bounded', () => {
  test('ordinary LZW and RunLength content streams still read (markers found in them)', async () => {
    for (const filter of ['LZWDecode', 'RunLengthDecode']) {
      const pdf = PDF.create();
      const page = pdf.addPage({ size: 'letter' });
      page.drawText('{{initials, r1}}', { x: 72, y: 700 });
      const font = page.registerFont('Helvetica');
      const body = new TextEncoder().encode(`BT /${font} 12 Tf 72 400 Td ({{signature, r1}}) Tj ET`);
      const encoded = filter === 'LZWDecode' ? lzwLiteral(body) : runLength(body);
      const contents = page.dict.get('Contents');
      page.dict.set('Contents', new PdfArray([contents as never, pdf.createStream({ Filter: PdfName.of(filter) }, encoded)]));
      const doc = await prepareDocument([await pdf.save({ compressStreams: false })], TIGHT);
      assert.deepEqual(doc.markers.map((m) => m.type).sort(), ['INITIALS', 'SIGNATURE'], filter);
    }
  });

  test('an LZWDecode bomb (about 40 KB expanding to 100 MiB) is refused with INVALID_PDF and a reason', async () => {
    const bomb = lzwBomb(100);
    assert.ok(bomb.length < 64 * 1024, `bomb is ${bomb.length} bytes`);
    await rejectsBomb(prepareDocument([await pdfWithContent('LZWDecode', bomb)], TIGHT));
  });

  test('a RunLengthDecode bomb (1.6 MB expanding to 100 MiB) is refused with INVALID_PDF and a reason', async () => {
    await rejectsBomb(prepareDocument([await pdfWithContent('RunLengthDecode', runLengthBomb(100))], TIGHT));
  });

  test('streams each under the per-stream bound count together against the job total, whatever their filters', async () => {
    // 32 MB of heap: 16 MiB per stream, 128 MiB per job. Nine streams of 15 MiB, LZW, RunLength and Flate in turn.
    const pdf = PDF.create();
    for (let i = 0; i < 9; i++) {
      const page = pdf.addPage({ size: 'letter' });
      const [filter, data] = [
        ['LZWDecode', lzwBomb(15)],
        ['RunLengthDecode', runLengthBomb(15)],
        ['FlateDecode', deflateSync(Buffer.alloc(15 * 1024 * 1024, 0x20))],
      ][i % 3] as [string, Uint8Array];
      page.dict.set('Contents', pdf.createStream({ Filter: PdfName.of(filter) }, data));
    }
    await rejectsBomb(prepareDocument([await pdf.save({ compressStreams: false })], { timeoutMs: 60_000, maxMemoryMb: 32 }), 32);
  });

  test('a predictor or CCITT row size far beyond the data is refused before anything is allocated', async () => {
    const rl = runLength(new TextEncoder().encode('BT ET'));
    await rejectsBomb(prepareDocument([await pdfWithContent('RunLengthDecode', rl, { Predictor: 12, Columns: 100_000_000, Colors: 4 })], TIGHT));
  });
});

/**
 * Three pages, each with its marker drawn by libpdf; page 2 gets a second content stream made by
 * `extra`, and the font `font` as /F9 if given.
 */
async function threePages(extra: (pdf: PDF) => unknown, font?: (pdf: PDF) => PdfDict): Promise<Uint8Array> {
  const pdf = PDF.create();
  for (let i = 1; i <= 3; i++) pdf.addPage({ size: 'letter' }).drawText(`{{signature, r${i}}}`, { x: 72, y: 700 });
  const page = pdf.getPages()[1];
  page.dict.set('Contents', new PdfArray([page.dict.get('Contents') as never, extra(pdf) as never]));
  if (font) ((page.dict.get('Resources') as PdfDict).get('Font') as PdfDict).set('F9', font(pdf));
  return pdf.save({ compressStreams: false });
}

/** A content stream of some 10 KB: enough LZW table entries to need 10- and 11-bit codes. */
const longContent = new TextEncoder().encode(
  Array.from({ length: 150 }, (_, i) => `BT /Helv 9 Tf 72 ${690 - (i % 60) * 11} Td (Clause ${i}: the parties agree to what is written here.) Tj ET`).join('\n'),
);

describe('a page whose content cannot be decoded', () => {
  test('LZW content streams as other tools write them decode, as qpdf decodes them (EarlyChange 1 and 0)', async () => {
    for (const early of [1, 0] as const) {
      const encoded = fx.lzwEncode(longContent, early);
      const bytes = await threePages((pdf) => pdf.createStream({ Filter: PdfName.of('LZWDecode'), ...(early === 0 ? { DecodeParms: new PdfDict([['EarlyChange', PdfNumber.of(0)]]) } : {}) }, encoded));
      // An independent reader agrees that these are the bytes encoded.
      const decoded = fx.qpdfPdf(bytes, ['--qdf', '--decode-level=all', '--object-streams=disable']);
      if (decoded) assert.ok(Buffer.from(decoded).includes(Buffer.from(longContent)), `qpdf decodes EarlyChange ${early}`);
      const doc = await prepareDocument([bytes], TIGHT);
      assert.deepEqual(doc.markers.map((m) => m.page), [1, 2, 3], `EarlyChange ${early}`);
    }
  });

  test('a content stream that cannot be decoded refuses the file with INVALID_PDF naming its page', async () => {
    const cases: [string, (pdf: PDF) => unknown, RegExp][] = [
      // Right after the clear code, 511 names no entry yet.
      ['an invalid LZW code', (pdf) => pdf.createStream({ Filter: PdfName.of('LZWDecode') }, Uint8Array.from([0x80, 0x3f, 0xff, 0xff])), /^Page 2 of the PDF cannot be decoded \(Invalid LZW code 511\)/],
      ['damaged Flate data', (pdf) => pdf.createStream({ Filter: PdfName.of('FlateDecode') }, Uint8Array.from([0x78, 0x9c, 0xff, 0xff, 0xff, 0x00, 0x12, 0x34])), /^Page 2 of the PDF cannot be decoded: a compressed stream's data is damaged/],
      ['an unknown filter', (pdf) => pdf.createStream({ Filter: PdfName.of('FooDecode') }, longContent), /^Page 2 of the PDF cannot be decoded \(Unknown filter: FooDecode\)/],
      ['a Flate bomb', (pdf) => pdf.createStream({ Filter: PdfName.of('FlateDecode') }, deflateSync(Buffer.alloc(100 * 1024 * 1024, 0x20))), /^Page 2 of the PDF contains a compressed stream that expands beyond the 64 MB limit/],
      ['an LZW bomb', (pdf) => pdf.createStream({ Filter: PdfName.of('LZWDecode') }, lzwBomb(100)), /^Page 2 of the PDF contains a compressed stream that expands beyond the 64 MB limit/],
    ];
    for (const [name, stream, reason] of cases) {
      await assert.rejects(prepareDocument([await threePages(stream)], TIGHT), (err: unknown) => {
        assert.ok(err instanceof AppError && err.code === 'INVALID_PDF', `${name}: ${String(err)}`);
        assert.match(err.message, reason, name);
        return true;
      });
    }
  });

  test('what readers tolerate still reads: Flate ended after a sync flush, a wrong checksum, a font stream that cannot be decoded', async () => {
    const zlib = deflateSync(longContent);
    const badChecksum = Uint8Array.from(zlib.map((b, i) => (i >= zlib.length - 4 ? b ^ 0xff : b)));
    const cases: [string, (pdf: PDF) => unknown, ((pdf: PDF) => PdfDict)?][] = [
      // PDFium writes these: no final block, the stream just stops.
      ['sync flush', (pdf) => pdf.createStream({ Filter: PdfName.of('FlateDecode') }, deflateSync(longContent, { finishFlush: zc.Z_SYNC_FLUSH }))],
      ['wrong Adler-32', (pdf) => pdf.createStream({ Filter: PdfName.of('FlateDecode') }, badChecksum)],
      // Only text extraction reads a font's ToUnicode map: a font we cannot read costs its markers, not the file.
      [
        'damaged ToUnicode',
        (pdf) => pdf.createStream({}, new TextEncoder().encode('BT /F9 12 Tf 72 300 Td (more text) Tj ET')),
        (pdf) =>
          new PdfDict([
            ['Type', PdfName.of('Font')],
            ['Subtype', PdfName.of('Type1')],
            ['BaseFont', PdfName.of('Helvetica')],
            ['ToUnicode', pdf.createStream({ Filter: PdfName.of('FlateDecode') }, Uint8Array.from([0x78, 0x9c, 0xff, 0xff, 0xff]))],
          ]),
      ],
    ];
    for (const [name, stream, font] of cases) {
      const doc = await prepareDocument([await threePages(stream, font)], TIGHT);
      assert.deepEqual(doc.markers.map((m) => m.page), [1, 2, 3], name);
    }
  });
});
