import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ops, PdfArray, PdfDict, PdfName, PdfNumber, PdfStream } from '@libpdf/core';
import { AppError, type ErrorCode } from '../errors.js';
import { decodeWithLzw, usesLzw, type ByteSink } from './lzw.js';

export type DecodeLimits = {
  perStreamBytes: number;
  totalBytes: number;
  /** The worker's memory budget, as a refusal names the limit ("the 64 MB limit"). */
  limitMb: number;
};

export type DecodeGuard = {
  tripped(): boolean;
  /** Starts counting afresh (a new job). */
  reset(): void;
};

type InflateProto = {
  onData(this: { __inflated?: number }, chunk: Uint8Array): void;
  onEnd(this: { strm?: { msg?: string } }, status: number): void;
};
type WriterProto = { grow(this: Writer, needed: number): void; constructor: new (existing: undefined, opts: { initialSize: number }) => ByteSink };
type Writer = { offset: number; buffer: Uint8Array; __counted?: number };
type StreamProto = { getDecodedData(this: PdfStream): Uint8Array };

/**
 * Caps how much one stream may expand when decoded, and how much all of them may expand together
 * in one job, whatever its filters.
 *
 * Worker resourceLimits bound the JS heap, but decoded stream data lives in ArrayBuffers outside it:
 * a 25 MB upload of deflated zeros, or 1.6 MB of LZW codes, expands to gigabytes and would take the
 * whole process down, not just the worker. @libpdf/core 0.4.2 decodes in three ways, each guarded:
 * - FlateDecode inflates with pako, whose Inflate hands every output chunk to `onData`;
 * - LZWDecode, RunLengthDecode, ASCIIHexDecode, ASCII85Decode and CCITTFaxDecode write into its
 *   growable ByteWriter, whose `grow` sees every byte before it is stored (counted only while a
 *   stream is being decoded, so writing the output PDF is not);
 * - predictors and CCITT allocate a row from /DecodeParms /Columns up front: checked before decoding;
 * - signature images decoded with node's zlib instead (image.ts) are counted through countDecoded.
 * Throwing stops the expansion. libpdf often swallows the error and carries on with an empty stream,
 * so the caller asks `tripped()` afterwards and refuses the file, or reads what matters through
 * readChecked, which also learns of the Flate streams whose damaged data libpdf read as empty.
 *
 * It also replaces libpdf's LZW decoder, which reads streams other tools write wrongly (lzw.ts).
 *
 * Only for a worker that reads untrusted PDFs: it patches @libpdf/core for the whole thread.
 * Each part is installed when libpdf's internals are where 0.4.2 has them; answers null when none
 * could be (then only the heap limit and the timeout bound a bomb).
 */
export async function installDecodeGuard(limits: DecodeLimits): Promise<DecodeGuard | null> {
  const inflate = await pakoInflateProto();
  const writer = byteWriterProto();
  const stream = PdfStream.prototype as unknown as StreamProto;
  if (!inflate && !writer) return null;

  let total = 0;
  let tripped = false;
  let decoding = 0;
  limitMb = limits.limitMb;
  const refuse = (): never => {
    tripped = true;
    seen.limits++;
    throw new Error('decode limit reached');
  };
  countOutside = (bytes) => {
    if (bytes > limits.perStreamBytes || total + bytes > limits.totalBytes) refuse();
    total += bytes;
  };

  if (inflate) {
    const onData = inflate.onData;
    inflate.onData = function (chunk) {
      this.__inflated = (this.__inflated ?? 0) + chunk.length;
      total += chunk.length;
      if (this.__inflated > limits.perStreamBytes || total > limits.totalBytes) refuse();
      onData.call(this, chunk);
    };
    const onEnd = inflate.onEnd;
    inflate.onEnd = function (status) {
      // Z_DATA_ERROR (or a preset dictionary we do not have): the data is damaged. Not a wrong
      // checksum after data that inflated in full (readers ignore it), nor Z_BUF_ERROR, a stream that
      // ends early: PDFium and others end streams after a sync flush, and libpdf reads what is there.
      if ((status === Z_DATA_ERROR || status === Z_NEED_DICT) && this.strm?.msg !== 'incorrect data check') seen.damaged++;
      onEnd.call(this, status);
    };
  }

  if (writer && typeof stream.getDecodedData === 'function') {
    const grow = writer.grow;
    writer.grow = function (needed) {
      // Cheap on the hot path: only a write past the current buffer can allocate.
      if (decoding > 0 && this.offset + needed > this.buffer.length) {
        const required = this.offset + needed;
        const counted = this.__counted ?? this.buffer.length;
        if (required > limits.perStreamBytes || total + required - counted > limits.totalBytes) refuse();
        // The buffer at least doubles: count what it will hold, not byte by byte.
        const next = Math.min(limits.perStreamBytes, Math.max(required, this.buffer.length * 2));
        total += next - counted;
        this.__counted = next;
      }
      grow.call(this, needed);
    };

    const getDecodedData = stream.getDecodedData;
    const sink = (size: number) => new writer.constructor(undefined, { initialSize: size });
    stream.getDecodedData = function () {
      if (rowBytes(this) > limits.perStreamBytes) refuse();
      decoding++;
      try {
        return usesLzw(this) ? decodeWithLzw(this, sink, (single) => getDecodedData.call(single)) : getDecodedData.call(this);
      } finally {
        decoding--;
      }
    };
  }

  return {
    tripped: () => tripped,
    reset: () => {
      total = 0;
      tripped = false;
    },
  };
}

const Z_DATA_ERROR = -3;
const Z_NEED_DICT = 2;

let countOutside: ((bytes: number) => void) | undefined;
let limitMb = 0;
/** Limits reached and damaged Flate streams met in this thread, for readChecked. */
const seen = { limits: 0, damaged: 0 };

/** A refusal that already names where the file went wrong: answered as it is, not as a generic bomb. */
export class DecodeRefusal extends AppError {
  constructor(message: string, code: ErrorCode = 'INVALID_PDF') {
    super(code, message);
  }
}

/**
 * Runs `read`, which decodes streams, and refuses as `what` (e.g. "Page 3 of the PDF") whatever it
 * could not decode: an error of a filter (an LZW code that is not one, an unknown filter), a
 * decode limit reached, or a Flate stream whose data is damaged (those last two libpdf swallows,
 * reading the stream as empty or cut short). Where no guard is installed only errors are seen.
 */
export function readChecked<T>(what: string, read: () => T): T {
  const before = { ...seen };
  let result: T;
  try {
    result = read();
  } catch (err) {
    if (seen.limits === before.limits) throw new DecodeRefusal(`${what} cannot be decoded (${String((err as Error)?.message ?? err).slice(0, 160)})`);
  }
  if (seen.limits !== before.limits) throw new DecodeRefusal(`${what} contains a compressed stream that expands beyond the ${limitMb} MB limit`);
  if (seen.damaged !== before.damaged) throw new DecodeRefusal(`${what} cannot be decoded: a compressed stream's data is damaged`);
  return result!;
}

/**
 * Counts what is about to be decoded outside @libpdf/core (a signature image inflated with node's
 * zlib and unfiltered: ArrayBuffers the worker's heap limit does not see) against the same bounds
 * as a stream: each allocation at most the per-stream bound, all of a job's together the total.
 * Throws, and trips the guard, before the allocation; does nothing where no guard is installed.
 */
export function countDecoded(bytes: number): void {
  countOutside?.(bytes);
}

/** The pako instance libpdf imports, not whichever copy our own resolution would find. */
async function pakoInflateProto(): Promise<InflateProto | null> {
  try {
    const libpdfEntry = fileURLToPath(import.meta.resolve('@libpdf/core'));
    const pkgPath = createRequire(libpdfEntry).resolve('pako/package.json');
    const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { module?: string; exports?: { '.'?: { import?: string } } };
    const entry = pkg.exports?.['.']?.import ?? pkg.module;
    if (!entry) return null;
    const mod = (await import(pathToFileURL(join(dirname(pkgPath), entry)).href)) as { Inflate?: { prototype: InflateProto } };
    return mod.Inflate?.prototype ?? null;
  } catch {
    return null;
  }
}

/**
 * libpdf's ByteWriter is not exported; an operator's `toBytes()` makes one and hands it to the
 * operator's `writeTo`, where we catch it.
 */
function byteWriterProto(): WriterProto | null {
  try {
    const op = ops.pushGraphicsState() as unknown as { writeTo(w: unknown): void; toBytes(): Uint8Array };
    let caught: unknown;
    op.writeTo = (w) => {
      caught = w;
    };
    op.toBytes();
    const proto = caught ? (Object.getPrototypeOf(caught) as WriterProto) : null;
    return proto && typeof proto.grow === 'function' ? proto : null;
  } catch {
    return null;
  }
}

/**
 * The largest row any filter of the stream allocates before reading data: a predictor's row
 * (Columns × Colors × BitsPerComponent) or a CCITT row (Columns, a byte per pixel, twice).
 */
function rowBytes(stream: PdfStream): number {
  const filters = stream.get('Filter');
  const parms = stream.get('DecodeParms');
  const names = filters instanceof PdfArray ? [...Array(filters.length).keys()].map((i) => filters.at(i)) : [filters];
  const parmList = parms instanceof PdfArray ? [...Array(parms.length).keys()].map((i) => parms.at(i)) : [parms];
  let most = 0;
  names.forEach((name, i) => {
    const p = parmList[i];
    if (!(p instanceof PdfDict)) return;
    const num = (key: string, dflt: number) => {
      const v = p.get(key);
      return v instanceof PdfNumber && Number.isFinite(v.value) ? Math.abs(v.value) : dflt;
    };
    const columns = num('Columns', name instanceof PdfName && name.value === 'CCITTFaxDecode' ? 1728 : 1);
    if (name instanceof PdfName && name.value === 'CCITTFaxDecode') most = Math.max(most, columns * 2);
    else if (num('Predictor', 1) > 1) most = Math.max(most, Math.ceil((columns * num('Colors', 1) * num('BitsPerComponent', 8)) / 8));
  });
  return most;
}
