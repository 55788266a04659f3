// test-lane: once (opens no database)
/**
 * Every stream filter's output is bounded while an untrusted PDF is read, not only Flate's:
 * LZWDecode and RunLengthDecode bombs (encoders below) are refused with INVALID_PDF and a reason,
 * while ordinary LZW and RunLength streams still read.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';
import { PDF, PdfArray, PdfDict, PdfName, PdfNumber } from '@libpdf/core';
import { AppError } from '../src/errors.js';
import { closePdfWorkers, prepareDocument } from '../src/pdf/prepare.js';

const TIGHT = { timeoutMs: 15_000, maxMemoryMb: 64 };

after(() => closePdfWorkers());

/** MSB-first bit writer with PDF's LZW code widths (EarlyChange 1). */
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
    if (this.next === 512) this.width = 10;
    else if (this.next === 1024) this.width = 11;
    else if (this.next === 2048) this.width = 12;
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
