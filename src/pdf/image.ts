import { deflateSync, inflateSync } from 'node:zlib';
import { PDFImage, PdfName, PdfNumber, type PDF, type PdfObject } from '@libpdf/core';
import { countDecoded } from './decode-guard.js';
import { imageProblem, readImageSize } from './image-header.js';

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

/**
 * Embeds a signature image. PNGs of the common kind (8-bit, not interlaced, grey or RGB, with or
 * without alpha: what a canvas produces) are decoded and re-encoded with node's native zlib, several
 * times faster than @libpdf/core's pure-JS path; anything else (palette, 16-bit, interlaced, JPEG)
 * goes to @libpdf/core's embedImage. Either way what is decoded is the size the header check read,
 * and it counts against the job's decode budget (decode-guard.ts).
 */
export function embedSignatureImage(pdf: PDF, bytes: Uint8Array): PDFImage {
  // Checked again where it is decoded: an image stored before the door checked it, or by another path.
  const problem = imageProblem(bytes);
  if (problem) throw new Error(`A signature image ${problem}`);
  const native = embedPngNative(pdf, bytes);
  if (native) return native;
  const size = readImageSize(bytes)!;
  if (size.format === 'png') {
    // libpdf's decoder: its inflate is counted by the guard (pako); its unfiltered rows, at the file's
    // bytes per pixel, and the 8-bit colour and alpha it splits them into are counted here.
    const samples = CHANNELS[bytes[25]] ?? 4;
    countDecoded(size.width * size.height * samples * Math.ceil(bytes[24] / 8));
    countDecoded(size.width * size.height * 4);
  }
  return pdf.embedImage(bytes);
}

type PngInfo = { width: number; height: number; channels: number; idat: Buffer };

/**
 * The chunks the native path decodes. IHDR is the first chunk and the only one (imageProblem checked
 * it; refused here again rather than trusted): its size is the one readImageSize read.
 */
function readPng(bytes: Uint8Array): PngInfo | null {
  if (bytes.length < 33 || PNG_SIGNATURE.some((b, i) => bytes[i] !== b)) return null;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (pos + 8 <= buf.length) {
    const len = buf.readUInt32BE(pos);
    const type = buf.toString('latin1', pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      if (pos !== 8) throw new Error('A signature image is a PNG with more than one header (IHDR chunk)');
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      channels = colour === 3 ? 0 : (CHANNELS[colour] ?? 0);
      if (depth !== 8 || interlace !== 0 || !channels) return null;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    pos += 12 + len;
  }
  if (!width || !height || !idat.length) return null;
  return { width, height, channels, idat: Buffer.concat(idat) };
}

/** Reverses PNG's per-row filters (8-bit samples: the byte distance is the channel count). */
function unfilter(raw: Buffer, width: number, height: number, bpp: number): Uint8Array {
  const stride = width * bpp;
  const out = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const src = y * (stride + 1) + 1;
    const row = y * stride;
    const up = row - stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[row + x - bpp] : 0;
      const b = y > 0 ? out[up + x] : 0;
      const c = x >= bpp && y > 0 ? out[up + x - bpp] : 0;
      let v = raw[src + x];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[row + x] = v & 0xff;
    }
  }
  return out;
}

function embedPngNative(pdf: PDF, bytes: Uint8Array): PDFImage | null {
  const png = readPng(bytes);
  if (!png) return null;
  // A valid PNG inflates to exactly its rows; more is a bomb (zlib stops at the bound and throws).
  const expected = (png.width * png.channels + 1) * png.height;
  const pixelBytes = png.width * png.height * png.channels;
  // Counted before anything is allocated: the inflated rows, the unfiltered pixels, their split.
  countDecoded(expected);
  countDecoded(pixelBytes);
  if (png.channels === 2 || png.channels === 4) countDecoded(pixelBytes);
  let pixels: Uint8Array;
  try {
    const raw = inflateSync(png.idat, { maxOutputLength: expected });
    if (raw.length < expected) return null;
    pixels = unfilter(raw, png.width, png.height, png.channels);
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new Error('A signature image expands beyond its declared size');
    return null;
  }
  const { width, height, channels } = png;
  const colours = channels >= 3 ? 3 : 1;
  const image = (data: Uint8Array, gray: boolean, extra: Record<string, PdfObject> = {}) =>
    pdf.createStream(
      {
        Type: PdfName.of('XObject'),
        Subtype: PdfName.of('Image'),
        Width: PdfNumber.of(width),
        Height: PdfNumber.of(height),
        ColorSpace: PdfName.of(gray ? 'DeviceGray' : 'DeviceRGB'),
        BitsPerComponent: PdfNumber.of(8),
        Filter: PdfName.of('FlateDecode'),
        ...extra,
      },
      deflateSync(data),
    );
  if (channels === colours) return new PDFImage(image(pixels, colours === 1), width, height);
  // Split the alpha channel into a soft mask.
  const n = width * height;
  const colour = new Uint8Array(n * colours);
  const alpha = new Uint8Array(n);
  for (let i = 0, s = 0; i < n; i++) {
    for (let k = 0; k < colours; k++) colour[i * colours + k] = pixels[s++];
    alpha[i] = pixels[s++];
  }
  const smask = image(alpha, true);
  return new PDFImage(image(colour, colours === 1, { SMask: smask }), width, height);
}
