import { deflateSync } from 'node:zlib';
import { PdfArray, PdfDict, PdfName, PdfNumber, PdfStream } from '@libpdf/core';

/** Where decoded bytes go: libpdf's ByteWriter, whose growth the decode guard counts. */
export type ByteSink = { writeBytes(data: Uint8Array): void; toBytes(): Uint8Array };

const CLEAR = 256;
const EOD = 257;

/**
 * LZWDecode as PDF 32000-1 §7.4.4.2 defines it, and as qpdf, poppler and pdf.js read it: codes start
 * at 9 bits and widen once table entries 511, 1023 and 2047 exist (EarlyChange 1, the default; one
 * entry later with 0). The decoder builds each entry one code after the encoder did, so it widens when
 * its next entry plus EarlyChange reaches 512, 1024, 2048. @libpdf/core 0.4.2 waits one entry longer:
 * it reads one code too many at the old width, every later code is misaligned, and any stream whose
 * table grows past 253 entries between clear codes (every content stream of a few KB) fails with
 * "Invalid LZW code" or decodes to garbage.
 */
export function lzwDecode(data: Uint8Array, earlyChange: number, out: ByteSink): Uint8Array {
  const early = earlyChange === 0 ? 0 : 1;
  // Entry i is entry prefix[i] followed by the byte suffix[i]; first[i] is its first byte.
  const prefix = new Int32Array(4096);
  const suffix = new Uint8Array(4096);
  const first = new Uint8Array(4096);
  const length = new Uint16Array(4096);
  for (let i = 0; i < 256; i++) [suffix[i], first[i], length[i]] = [i, i, 1];
  const entry = new Uint8Array(4096);
  const bits = data.length * 8;
  let at = 0;
  let width = 9;
  let next = 258;
  let prev = -1;
  while (at + width <= bits) {
    let code = 0;
    for (let k = 0; k < width; k++, at++) code = (code << 1) | ((data[at >> 3] >> (7 - (at & 7))) & 1);
    if (code === EOD) break;
    if (code === CLEAR) {
      [width, next, prev] = [9, 258, -1];
      continue;
    }
    // A code not yet in the table is valid only as the entry being built (the KwKwK case).
    if (code > next || (code === next && prev < 0)) throw new Error(`Invalid LZW code ${code}`);
    if (prev >= 0 && next < 4096) {
      prefix[next] = prev;
      suffix[next] = code === next ? first[prev] : first[code];
      first[next] = first[prev];
      length[next] = length[prev] + 1;
      next++;
    }
    let c = code;
    for (let i = length[code] - 1; i >= 0; i--, c = prefix[c]) entry[i] = suffix[c];
    out.writeBytes(entry.subarray(0, length[code]));
    width = next + early >= 2048 ? 12 : next + early >= 1024 ? 11 : next + early >= 512 ? 10 : 9;
    prev = code;
  }
  return out.toBytes();
}

const isLzw = (name: unknown) => name instanceof PdfName && name.value === 'LZWDecode';

/** Whether any of the stream's filters is LZWDecode. */
export function usesLzw(stream: PdfStream): boolean {
  const filter = stream.get('Filter');
  return filter instanceof PdfArray ? [...Array(filter.length).keys()].some((i) => isLzw(filter.at(i))) : isLzw(filter);
}

/**
 * Decodes a stream whose filters include LZWDecode, filter by filter in order: LZW with lzwDecode,
 * every other filter by libpdf (`decode`, given a stream of that one filter). libpdf applies a
 * predictor only inside a filter, so LZW's output goes through it as a stored (uncompressed) Flate
 * stream with the same DecodeParms.
 */
export function decodeWithLzw(stream: PdfStream, sink: (size: number) => ByteSink, decode: (single: PdfStream) => Uint8Array): Uint8Array {
  const filter = stream.get('Filter');
  const parms = stream.get('DecodeParms');
  const names = filter instanceof PdfArray ? [...Array(filter.length).keys()].map((i) => filter.at(i)) : [filter];
  const parmList = parms instanceof PdfArray ? [...Array(parms.length).keys()].map((i) => parms.at(i)) : [parms];
  let data = stream.data;
  names.forEach((name, i) => {
    if (!(name instanceof PdfName)) return;
    const p = parmList[i] instanceof PdfDict ? (parmList[i] as PdfDict) : undefined;
    if (!isLzw(name)) {
      data = decode(new PdfStream([['Filter', name], ...(p ? [['DecodeParms', p] as [string, PdfDict]] : [])], data));
      return;
    }
    const early = p?.get('EarlyChange');
    data = lzwDecode(data, early instanceof PdfNumber ? early.value : 1, sink(Math.max(1024, data.length * 4)));
    const predictor = p?.get('Predictor');
    if (predictor instanceof PdfNumber && predictor.value > 1) data = decode(new PdfStream([['Filter', PdfName.of('FlateDecode')], ['DecodeParms', p!]], deflateSync(data, { level: 0 })));
  });
  return data;
}
