/**
 * What a signer's attachment is, checked and decoded (issue 37): run only in the sandboxed worker
 * (attachment-worker.ts), with the decode guard installed, never on the main thread (DESIGN §4.15).
 * The bytes must be what their Content-Type claims (magic bytes); a PDF must open, have at most
 * maxPages pages and have every stream reachable from its pages decode within the guard's bounds; a
 * PNG must declare at most MAX_ATTACHMENT_PIXELS and inflate to exactly its rows; a JPEG must declare
 * at most as many and have its markers in order up to the end of the image.
 */
import { inflateSync } from 'node:zlib';
import { PdfArray, PdfDict, PdfName, PdfRef, PdfStream, type PDF } from '@libpdf/core';
import { AppError, type ErrorCode } from '../errors.js';
import { ATTACHMENT_TYPES, type AttachmentType } from './attachment-types.js';
import { countDecoded, DecodeRefusal, readChecked } from './decode-guard.js';
import { loadPart, sha256Hex } from './document.js';
import { readImageSize } from './image-header.js';

/** An attached photo or scan may be larger than a signature image: 12 Mpx phone photos pass, 10000×10000 bombs do not. */
export const MAX_ATTACHMENT_SIDE = 10_000;
export const MAX_ATTACHMENT_PIXELS = 40_000_000;
/** Objects walked in one PDF: a file of millions of tiny objects costs its sender a refusal, not our time. */
const MAX_PDF_OBJECTS = 100_000;
/** Image codecs a renderer decodes (their pixel size is bounded by /Width × /Height, checked instead). */
const IMAGE_CODECS = new Set(['DCTDecode', 'JPXDecode', 'JBIG2Decode', 'CCITTFaxDecode']);

export type AttachmentCheckJob = { file?: string; bytes?: Uint8Array; claimed: AttachmentType; maxPages: number };
export type AttachmentCheck = { contentType: AttachmentType; size: number; sha256: string; pages?: number; width?: number; height?: number };

const refuse = (code: ErrorCode, message: string) => new DecodeRefusal(message, code);

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** What the bytes are by their magic, or null: %PDF- in the first KiB (as readers accept), the PNG signature, a JPEG's SOI and first marker. */
export function sniffAttachment(b: Uint8Array): AttachmentType | null {
  if (b.length >= 8 && PNG_SIGNATURE.every((x, i) => b[i] === x)) return 'image/png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  const head = Buffer.from(b.buffer, b.byteOffset, Math.min(b.length, 1024)).toString('latin1');
  return head.includes('%PDF-') ? 'application/pdf' : null;
}

export async function checkAttachmentInProcess(bytes: Uint8Array, claimed: AttachmentType, maxPages: number): Promise<AttachmentCheck> {
  const found = sniffAttachment(bytes);
  if (!found) throw new AppError('ATTACHMENT_TYPE_UNSUPPORTED', 'The file is not a PDF, PNG or JPEG');
  if (found !== claimed) throw new AppError('ATTACHMENT_TYPE_MISMATCH', `The file's bytes are ${found}, but it was sent as ${claimed}`);
  const base = { contentType: found, size: bytes.length, sha256: sha256Hex(bytes) };
  if (found === 'image/png') return { ...base, ...checkPng(bytes) };
  if (found === 'image/jpeg') return { ...base, ...checkJpeg(bytes) };
  return { ...base, pages: await checkPdf(bytes, maxPages) };
}

function pixelProblem(width: number, height: number): string | null {
  if (width < 1 || height < 1) return 'declares no pixels';
  if (width > MAX_ATTACHMENT_SIDE || height > MAX_ATTACHMENT_SIDE) return `is ${width}×${height} pixels; at most ${MAX_ATTACHMENT_SIDE} pixels a side are accepted`;
  if (width * height > MAX_ATTACHMENT_PIXELS) return `is ${width}×${height} pixels; at most ${MAX_ATTACHMENT_PIXELS} pixels in all are accepted`;
  return null;
}

const u32 = (b: Uint8Array, i: number) => ((b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]) >>> 0;
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

/** The bytes of PNG rows (filter byte included) for a width×height image at `bitsPerPixel`, Adam7 passes when interlaced. */
function pngRawBytes(width: number, height: number, bitsPerPixel: number, interlaced: boolean): number {
  const rows = (w: number, h: number) => (w === 0 || h === 0 ? 0 : (Math.ceil((w * bitsPerPixel) / 8) + 1) * h);
  if (!interlaced) return rows(width, height);
  const passes: [number, number, number, number][] = [[0, 0, 8, 8], [4, 0, 8, 8], [0, 4, 4, 8], [2, 0, 4, 4], [0, 2, 2, 4], [1, 0, 2, 2], [0, 1, 1, 2]];
  return passes.reduce((n, [x0, y0, dx, dy]) => n + rows(Math.ceil((width - x0) / dx), Math.ceil((height - y0) / dy)), 0);
}

/** Reads the chunks (one IHDR, first), bounds the declared size, and inflates the data to exactly its rows: no more (a bomb), no less (damaged). */
function checkPng(b: Uint8Array): { width: number; height: number } {
  if (b.length < 33 || u32(b, 8) !== 13 || String.fromCharCode(b[12], b[13], b[14], b[15]) !== 'IHDR') throw refuse('ATTACHMENT_INVALID', 'The PNG has no header (IHDR) where it must be');
  const width = u32(b, 16);
  const height = u32(b, 20);
  const [depth, colour, , , interlace] = [b[24], b[25], b[26], b[27], b[28]];
  const problem = pixelProblem(width, height);
  if (problem) throw refuse('ATTACHMENT_BOMB', `The PNG ${problem}`);
  const channels = CHANNELS[colour];
  if (!channels || ![1, 2, 4, 8, 16].includes(depth) || interlace > 1) throw refuse('ATTACHMENT_INVALID', 'The PNG has a colour type or bit depth PNG does not define');
  const idat: Uint8Array[] = [];
  let headers = 0;
  let ended = false;
  for (let pos = 8; pos + 12 <= b.length; ) {
    const len = u32(b, pos);
    const type = String.fromCharCode(b[pos + 4], b[pos + 5], b[pos + 6], b[pos + 7]);
    if (pos + 12 + len > b.length) break;
    if (type === 'IHDR') headers++;
    else if (type === 'IDAT') idat.push(b.subarray(pos + 8, pos + 8 + len));
    else if (type === 'IEND') {
      ended = true;
      break;
    }
    pos += 12 + len;
  }
  if (headers !== 1) throw refuse('ATTACHMENT_INVALID', 'The PNG has more than one header (IHDR chunk)');
  if (!ended || idat.length === 0) throw refuse('ATTACHMENT_INVALID', 'The PNG is cut short (no image data or no end chunk)');
  const expected = pngRawBytes(width, height, depth * channels, interlace === 1);
  // Counted against the job's decode budget before anything is allocated.
  countDecoded(expected);
  let raw: Buffer;
  try {
    raw = inflateSync(Buffer.concat(idat), { maxOutputLength: expected });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw refuse('ATTACHMENT_BOMB', `The PNG's data expands beyond its declared ${width}×${height} pixels`);
    throw refuse('ATTACHMENT_INVALID', 'The PNG\'s image data is damaged');
  }
  if (raw.length < expected) throw refuse('ATTACHMENT_INVALID', 'The PNG\'s image data is cut short');
  if (interlace === 0) {
    const stride = Math.ceil((width * depth * channels) / 8) + 1;
    for (let y = 0; y < height; y++) if (raw[y * stride] > 4) throw refuse('ATTACHMENT_INVALID', 'The PNG\'s image data is damaged (an unknown row filter)');
  }
  return { width, height };
}

/** Bounds the declared size and walks the markers to the scan and on to the end of the image. */
function checkJpeg(b: Uint8Array): { width: number; height: number } {
  const size = readImageSize(b);
  if (!size || size.format !== 'jpeg') throw refuse('ATTACHMENT_INVALID', 'The JPEG has no frame header (its size cannot be read)');
  const problem = pixelProblem(size.width, size.height);
  if (problem) throw refuse('ATTACHMENT_BOMB', `The JPEG ${problem}`);
  let end = b.length;
  while (end > 2 && (b[end - 1] === 0x00 || b[end - 1] === 0x0a || b[end - 1] === 0x0d || b[end - 1] === 0x20)) end--;
  if (!(b[end - 2] === 0xff && b[end - 1] === 0xd9)) throw refuse('ATTACHMENT_INVALID', 'The JPEG is cut short (no end-of-image marker)');
  return { width: size.width, height: size.height };
}

/** Opens the PDF, bounds its pages, and decodes every stream reachable from them under the decode guard. */
async function checkPdf(bytes: Uint8Array, maxPages: number): Promise<number> {
  let pdf: PDF;
  try {
    pdf = await loadPart(bytes);
  } catch (err) {
    if (err instanceof AppError && err.code === 'INVALID_PDF') throw refuse('ATTACHMENT_INVALID', err.message.replace(/^The PDF/, 'The attached PDF'));
    throw err;
  }
  const pages = pdf.getPageCount();
  if (pages > maxPages) throw refuse('ATTACHMENT_INVALID', `The attached PDF has ${pages} pages; at most ${maxPages} are accepted`);
  const resolve = (v: unknown) => (v instanceof PdfRef ? pdf.getObject(v) : v);
  const seen = new Set<unknown>();
  let walked = 0;
  const visit = (value: unknown, where: string): void => {
    const obj = resolve(value);
    if (!obj || typeof obj !== 'object' || seen.has(obj)) return;
    seen.add(obj);
    if (++walked > MAX_PDF_OBJECTS) throw refuse('ATTACHMENT_INVALID', `The attached PDF has more than ${MAX_PDF_OBJECTS} objects`);
    if (obj instanceof PdfStream) decodeStream(obj, where);
    if (obj instanceof PdfDict) {
      for (const [key, v] of obj) if (key.value !== 'Parent' && key.value !== 'P') visit(v, where);
    } else if (obj instanceof PdfArray) for (let i = 0; i < obj.length; i++) visit(obj.at(i), where);
  };
  try {
    pdf.getPages().forEach((page, i) => visit(page.dict, `Page ${i + 1} of the attached PDF`));
  } catch (err) {
    if (err instanceof DecodeRefusal && err.code === 'INVALID_PDF') throw refuse(/expands beyond/.test(err.message) ? 'ATTACHMENT_BOMB' : 'ATTACHMENT_INVALID', err.message);
    if (err instanceof AppError) throw err;
    throw refuse('ATTACHMENT_INVALID', `The attached PDF could not be read (${String((err as Error)?.message ?? err).slice(0, 160)})`);
  }
  return pages;
}

function decodeStream(stream: PdfStream, where: string): void {
  const filter = stream.get('Filter');
  const names = filter instanceof PdfArray ? [...Array(filter.length).keys()].map((i) => filter.at(i)) : [filter];
  if (names.some((n) => n instanceof PdfName && IMAGE_CODECS.has(n.value))) {
    const num = (k: string) => {
      const v = stream.get(k) as { value?: unknown } | undefined;
      return typeof v?.value === 'number' ? v.value : 0;
    };
    const problem = num('Width') || num('Height') ? pixelProblem(Math.max(1, num('Width')), Math.max(1, num('Height'))) : null;
    if (problem) throw refuse('ATTACHMENT_BOMB', `${where} holds an image that ${problem}`);
    return;
  }
  readChecked(where, () => stream.getDecodedData());
}
