/**
 * Signature images are checked for their dimensions before anything decodes them: a 0.4 MB PNG can
 * declare 10000×10000 pixels (400 MB decoded), and 16000×16000 still fits in 1 MB (about 3 GB).
 * Reading the PNG IHDR or the JPEG SOFn header needs no decoding.
 */
export const MAX_IMAGE_SIDE = 4000;
/** 4 megapixels: 16 MB as 8-bit RGBA, far more than a signature box ever shows. */
export const MAX_IMAGE_PIXELS = 4_000_000;

export type ImageSize = { format: 'png' | 'jpeg'; width: number; height: number };

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The declared size of a PNG or JPEG, or null when the header cannot be read. */
export function readImageSize(bytes: Uint8Array): ImageSize | null {
  if (bytes.length >= 24 && PNG_SIGNATURE.every((b, i) => bytes[i] === b)) return pngSize(bytes);
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8) return jpegSize(bytes);
  return null;
}

/**
 * Why these bytes are refused as a signature image before anything decodes them, or null: a PNG or
 * JPEG whose size can be read, a PNG with exactly one IHDR (see pngHeaders), within the bounds.
 */
export function imageProblem(bytes: Uint8Array): string | null {
  const png = bytes.length >= 8 && PNG_SIGNATURE.every((b, i) => bytes[i] === b);
  if (!png && !(bytes[0] === 0xff && bytes[1] === 0xd8)) return 'is not a PNG or JPEG image';
  const size = readImageSize(bytes);
  if (!size) return `is a ${png ? 'PNG' : 'JPEG'} whose size cannot be read`;
  if (png && pngHeaders(bytes) !== 1) return 'is a PNG with more than one header (IHDR chunk); exactly one is accepted';
  return imageSizeProblem(size);
}

/** Why an image of this size is refused, or null when it is within bounds. */
export function imageSizeProblem(size: ImageSize): string | null {
  if (size.width < 1 || size.height < 1) return 'declares no pixels';
  if (size.width > MAX_IMAGE_SIDE || size.height > MAX_IMAGE_SIDE) return `is ${size.width}×${size.height} pixels; at most ${MAX_IMAGE_SIDE} pixels a side are accepted`;
  if (size.width * size.height > MAX_IMAGE_PIXELS) return `is ${size.width}×${size.height} pixels; at most ${MAX_IMAGE_PIXELS} pixels in all are accepted`;
  return null;
}

const u16 = (b: Uint8Array, i: number) => (b[i] << 8) | b[i + 1];
const u32 = (b: Uint8Array, i: number) => ((b[i] << 24) | (b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]) >>> 0;

/** IHDR must be the first chunk: length 13, then width and height (see also pngHeaders). */
function pngSize(b: Uint8Array): ImageSize | null {
  if (u32(b, 8) !== 13 || String.fromCharCode(b[12], b[13], b[14], b[15]) !== 'IHDR') return null;
  return { format: 'png', width: u32(b, 16), height: u32(b, 20) };
}

/**
 * How many IHDR chunks come before IEND. Decoders take the last one they meet (@libpdf/core's
 * parsePng does), this check the first: a second IHDR would let a small declared size through and
 * have a huge one decoded. Reads chunk headers only, nothing is decoded.
 */
function pngHeaders(b: Uint8Array): number {
  let count = 0;
  for (let pos = 8; pos + 8 <= b.length; pos += 12 + u32(b, pos)) {
    const type = String.fromCharCode(b[pos + 4], b[pos + 5], b[pos + 6], b[pos + 7]);
    if (type === 'IEND') break;
    if (type === 'IHDR') count++;
  }
  return count;
}

/**
 * Walks the marker segments up to the first start-of-frame (SOF0..SOF15 except DHT C4, JPG C8 and
 * DAC CC), whose payload is precision, height, width. A scan starting first means no size: null.
 */
function jpegSize(b: Uint8Array): ImageSize | null {
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return null;
    const marker = b[i + 1];
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2; // no payload
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null;
    const length = u16(b, i + 2);
    if (length < 2) return null;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (i + 9 > b.length) return null;
      return { format: 'jpeg', height: u16(b, i + 5), width: u16(b, i + 7) };
    }
    i += 2 + length;
  }
  return null;
}
