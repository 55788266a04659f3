import { createHash } from 'node:crypto';
import { PDF, PdfDict, PdfNumber, type PdfRef } from '@libpdf/core';
import { AppError } from '../errors.js';
import { pageBox, pageGeometry } from './geometry.js';
import { findMarkers } from './markers.js';
import type { PreparedDocument } from './types.js';

const PDF_HEADER = new TextEncoder().encode('%PDF-');
/** Readers accept the header anywhere in the first KiB (some producers put junk before it). */
const HEADER_WINDOW = 1024;

function partName(index: number, count: number): string {
  return count > 1 ? `PDF part ${index + 1}` : 'The PDF';
}

function hasPdfHeader(bytes: Uint8Array): boolean {
  const end = Math.min(bytes.length - PDF_HEADER.length, HEADER_WINDOW);
  outer: for (let i = 0; i <= end; i++) {
    for (let j = 0; j < PDF_HEADER.length; j++) if (bytes[i + j] !== PDF_HEADER[j]) continue outer;
    return true;
  }
  return false;
}

/**
 * Opens one uploaded part leniently (libpdf rebuilds a broken xref by scanning the file) and refuses
 * what cannot become an envelope document: not a PDF, nothing recoverable, encrypted, no pages.
 */
export async function loadPart(bytes: Uint8Array, index = 0, count = 1): Promise<PDF> {
  const name = partName(index, count);
  if (!hasPdfHeader(bytes)) throw new AppError('INVALID_PDF', `${name} is not a PDF file (no %PDF- header)`);
  let pdf: PDF;
  try {
    pdf = await PDF.load(bytes, { lenient: true });
  } catch (err) {
    throw new AppError('INVALID_PDF', `${name} is damaged beyond repair (${short(err)})`);
  }
  // Checked before anything reads page content: undecryptable content is noise that can send the
  // content parser into a loop. Owner-password-only files are refused too (SPEC.md: encrypted → INVALID_PDF).
  if (pdf.isEncrypted) {
    throw new AppError('INVALID_PDF', `${name} is encrypted; remove its password or protection and upload it again`);
  }
  let pages: number;
  try {
    pages = pdf.getPageCount();
  } catch (err) {
    throw new AppError('INVALID_PDF', `${name} is damaged beyond repair (${short(err)})`);
  }
  if (pages < 1) throw new AppError('INVALID_PDF', pdf.recoveredViaBruteForce ? `${name} is damaged beyond repair: no page can be read` : `${name} has no pages`);
  // A rebuilt file that lost pages (typically a truncated download) would be signed incomplete.
  const declared = declaredPageCount(pdf);
  if (pdf.recoveredViaBruteForce && declared !== null && declared > pages) {
    throw new AppError('INVALID_PDF', `${name} is damaged beyond repair: it declares ${declared} pages but only ${pages} can be read (truncated file?)`);
  }
  return pdf;
}

function declaredPageCount(pdf: PDF): number | null {
  try {
    const resolve = (ref: PdfRef) => pdf.getObject(ref);
    const root = pdf.getCatalog().get('Pages', resolve);
    const count = root instanceof PdfDict ? root.get('Count', resolve) : undefined;
    return count instanceof PdfNumber ? count.value : null;
  } catch {
    return null;
  }
}

/**
 * Joins the parts in order into the envelope's one document. One clean part keeps its bytes as they
 * are (an already-signed PDF keeps its signature); several parts, or a part that needed repair, are
 * written out afresh.
 */
export async function joinParts(parts: Uint8Array[]): Promise<{ pdf: PDF; bytes: Uint8Array; unchanged: boolean }> {
  if (parts.length === 0) throw new AppError('INVALID_PDF', 'No PDF was given');
  const docs: PDF[] = [];
  for (let i = 0; i < parts.length; i++) docs.push(await loadPart(parts[i], i, parts.length));
  const [base, ...rest] = docs;
  if (rest.length === 0 && !base.recoveredViaBruteForce) return { pdf: base, bytes: parts[0], unchanged: true };
  for (const doc of rest) {
    await base.copyPagesFrom(doc, Array.from({ length: doc.getPageCount() }, (_, j) => j));
  }
  // A repaired file with nothing else changed would be saved as its original (broken) bytes.
  base.setModificationDate(new Date());
  const bytes = await base.save();
  // Work on what was written, so page indexes, markers and hash all describe the stored bytes.
  return { pdf: await PDF.load(bytes), bytes, unchanged: false };
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Everything prepareDocument answers, computed in the current thread (the worker calls this). */
export async function prepareInProcess(parts: Uint8Array[]): Promise<Omit<PreparedDocument, 'file' | 'size' | 'bytes'> & { bytes: Uint8Array; unchanged: boolean }> {
  try {
    const { pdf, bytes, unchanged } = await joinParts(parts);
    const pages = pdf.getPages().map((p) => pageBox(pageGeometry(pdf, p)));
    const { markers, badMarkers } = findMarkers(pdf);
    return { bytes, unchanged, info: { pageCount: pages.length, pages }, markers, badMarkers, sha256: sha256Hex(bytes) };
  } catch (err) {
    // Whatever else fails while reading an untrusted file is the file's doing.
    if (err instanceof AppError) throw err;
    throw new AppError('INVALID_PDF', `The PDF could not be read (${short(err)})`);
  }
}

function short(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.length > 160 ? `${msg.slice(0, 157)}...` : msg;
}
