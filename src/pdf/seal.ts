import { HttpTimestampAuthority, PDF, type PDFPage, type Signer } from '@libpdf/core';
import { AppError } from '../http/errors.js';
import { appendCertificate } from './certificate.js';
import { materializeInherited, pageGeometry, placementToUserRect, type PageGeometry } from './geometry.js';
import { removeTextInBoxes } from './redact.js';
import { coverPlacement, stampField } from './stamp.js';
import type { CertificateData, Placement, StampField } from './types.js';

export type SealInput = {
  /** The envelope's document as prepared (PreparedDocument.bytes). */
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

  appendCertificate(pdf, input.certificate);

  const tsa = input.tsaUrl ? new HttpTimestampAuthority(input.tsaUrl) : undefined;
  const { bytes } = await pdf.sign({
    signer: input.signer,
    reason: `Signed electronically; envelope ${input.certificate.envelopeId}`,
    subFilter: 'ETSI.CAdES.detached',
    level: tsa ? 'B-T' : 'B-B',
    timestampAuthority: tsa,
    // A timestamp token brings the TSA's certificates along: make room for them.
    estimatedSize: tsa ? 32_768 : undefined,
  });
  return bytes;
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
