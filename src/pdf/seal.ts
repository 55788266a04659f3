import { HttpTimestampAuthority, PDF, PdfArray, PdfDict, PdfRef, type PDFPage, type Signer } from '@libpdf/core';
import { AppError } from '../errors.js';
import { appendCertificate } from './certificate.js';
import { finishFonts } from './fonts.js';
import { materializeInherited, pageGeometry, placementToUserRect, type PageGeometry } from './geometry.js';
import { removeTextInBoxes } from './redact.js';
import { coverPlacement, stampField } from './stamp.js';
import type { CertificateData, Placement, StampField } from './types.js';

export type SealInput = {
  /** The envelope's document as prepared and stored (its original.pdf). */
  original: Uint8Array;
  fields: StampField[];
  /** Marker boxes to make disappear (the fields placed from `{{type, rN}}` markers). */
  hide: Placement[];
  certificate: CertificateData;
  signer: Signer;
  /** RFC 3161 timestamp authority: PAdES B-T instead of B-B. */
  tsaUrl?: string;
};

/**
 * Produces the completed envelope's PDF: marker text removed, every value stamped, the audit
 * certificate appended, forms and annotations flattened, then one PAdES signature
 * (ETSI.CAdES.detached) appended as an incremental update over all of it.
 */
export async function sealDocument(input: SealInput): Promise<Uint8Array> {
  const pdf = await stampDocument(input);
  keepFlatPageTree(pdf);
  appendCertificate(pdf, input.certificate);
  // Subset the fonts now: pdf.sign saves without subsetting, which would embed each whole font.
  finishFonts(pdf);

  const tsa = input.tsaUrl ? new HttpTimestampAuthority(input.tsaUrl) : undefined;
  const { bytes } = await pdf.sign({
    signer: input.signer,
    // No parentheses in the reason: @libpdf/core escapes them twice in the literal string.
    reason: `${input.certificate.test ? 'TEST - test-mode send, not a binding signature; ' : ''}Signed electronically; envelope ${input.certificate.envelopeId}`,
    subFilter: 'ETSI.CAdES.detached',
    level: tsa ? 'B-T' : 'B-B',
    timestampAuthority: tsa,
    // A timestamp token brings the TSA's certificates along: make room for them.
    estimatedSize: tsa ? 32_768 : undefined,
  });
  return bytes;
}

export type StampInput = Pick<SealInput, 'original' | 'fields' | 'hide'>;

/**
 * The document as it stands while the envelope is open, for its recipients (DESIGN §5): marker text
 * removed and the values of those who already acted stamped, exactly as sealing will, but with no
 * certificate and no signature. Saved as an incremental update, as the seal is: cheap for a large
 * upload, and an earlier signature in it stays valid (the prepared bytes stay as they were).
 */
export async function renderDocument(input: StampInput): Promise<Uint8Array> {
  const pdf = await stampDocument(input);
  return pdf.save({ incremental: true, subsetFonts: true });
}

/** Loads the document, takes the marker text out, flattens forms and annotations, and stamps every field. */
async function stampDocument(input: StampInput): Promise<PDF> {
  const pdf = await PDF.load(input.original);
  const pages = pdf.getPages();
  const geometry = pages.map((p) => pageGeometry(pdf, p));
  const onPage = <T extends Placement>(list: T[], i: number) => list.filter((p) => p.page === i + 1);
  for (const p of [...input.fields, ...input.hide]) {
    if (!Number.isInteger(p.page) || p.page < 1 || p.page > pages.length) throw new AppError('INTERNAL_ERROR', `A field is on page ${p.page}, but the document has ${pages.length} page(s)`);
  }

  // Markers first, on the original content, before anything else is appended to the pages.
  pages.forEach((page, i) => {
    materializeInherited(pdf, page);
    hideMarkers(pdf, page, geometry[i], onPage(input.hide, i));
  });

  // Flatten before stamping so existing form values and annotations end up under our stamps. Filled
  // signature fields stay (an already-signed upload keeps its earlier signature valid).
  pdf.flattenAll({ form: { skipSignatures: true } });

  pages.forEach((page, i) => {
    for (const field of onPage(input.fields, i)) stampField(pdf, page, geometry[i], field);
  });
  return pdf;
}

type PageTreeInternals = { flattened?: boolean; root?: PdfDict; rootRef?: PdfRef; pages?: PdfRef[] };

/**
 * Adding a page makes @libpdf/core 0.4.2 "flatten" the page tree first, setting /Parent on every
 * page even when the tree is already flat, so the incremental update rewrites every page
 * dictionary (a 100-page document: 100 objects instead of a handful). When the root's kids are
 * exactly the pages and each already names the root as parent, we tell it so. (Pages of a nested
 * tree keep their inherited attributes either way: materializeInherited copied them.)
 */
function keepFlatPageTree(pdf: PDF): void {
  const tree = (pdf.context as unknown as { pages?: PageTreeInternals }).pages;
  if (!tree || tree.flattened !== false || !(tree.root instanceof PdfDict) || !(tree.rootRef instanceof PdfRef) || !Array.isArray(tree.pages)) return;
  const same = (a: unknown, b: PdfRef) => a instanceof PdfRef && a.objectNumber === b.objectNumber && a.generation === b.generation;
  const kids = tree.root.get('Kids');
  if (!(kids instanceof PdfArray) || kids.length !== tree.pages.length) return;
  for (let i = 0; i < kids.length; i++) {
    const page = pdf.getObject(tree.pages[i]);
    if (!same(kids.at(i), tree.pages[i]) || !(page instanceof PdfDict) || !same(page.get('Parent'), tree.rootRef)) return;
  }
  tree.flattened = true;
}

/**
 * Takes the marker glyphs out of the text layer; a box where nothing could be removed (text in a
 * form XObject, a font we cannot measure) is painted over with white instead.
 */
function hideMarkers(pdf: PDF, page: PDFPage, g: PageGeometry, hide: Placement[]): void {
  if (!hide.length) return;
  const removed = removeTextInBoxes(pdf, page, hide.map((p) => placementToUserRect(g, p)));
  hide.forEach((p, i) => {
    if (removed[i] === 0) coverPlacement(page, g, p);
  });
}
