import { PDF, PdfArray, PdfDict, PdfRef, type PDFPage, type Signer } from '@libpdf/core';
import { X509Certificate } from 'node:crypto';
import type { PadesLevel, TsaConfig } from '../config-signing.js';
import { AppError } from '../errors.js';
import { createSealRevocation, revocationSources, type SealRevocation } from '../providers/certs/revocation.js';
import { createTimestampAuthority } from '../providers/certs/tsa.js';
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
  /** The level to seal at (B-B when unset) and what it needs: structured-cloneable, it crosses into the sealing worker. */
  pades?: SealPades;
};

export type SealPades = {
  level: PadesLevel;
  /** Required from B-T up. */
  tsa?: Pick<TsaConfig, 'urls' | 'headers' | 'timeoutMs'>;
  /** Bound on each OCSP, CRL and certificate fetch (B-LT, B-LTA). */
  revocationTimeoutMs?: number;
};

/** A document timestamp's token carries the TSA's chain; real TSAs' run to several KB. */
const TIMESTAMP_ROOM = 32_768;

/**
 * Produces the completed envelope's PDF: marker text removed, every value stamped, the audit
 * certificate appended, forms and annotations flattened, then one PAdES signature
 * (ETSI.CAdES.detached) appended as an incremental update over all of it.
 */
export async function sealDocument(input: SealInput): Promise<Uint8Array> {
  const level = input.pades?.level ?? 'B-B';
  const tsa = level === 'B-B' ? undefined : input.pades?.tsa && createTimestampAuthority(input.pades.tsa);
  if (level !== 'B-B' && !tsa) throw new AppError('INTERNAL_ERROR', `PAdES ${level} needs a timestamp authority`);
  const longTerm = level === 'B-LT' || level === 'B-LTA';
  const revocation = longTerm ? createSealRevocation({ timeoutMs: input.pades?.revocationTimeoutMs ?? 10_000 }) : undefined;
  // Before any work: a seal made with a revoked certificate proves nothing, so it is never made.
  if (revocation) await refuseRevoked(input.signer, revocation);

  const pdf = await stampDocument(input);
  keepFlatPageTree(pdf);
  appendCertificate(pdf, input.certificate);
  // Subset the fonts now: pdf.sign saves without subsetting, which would embed each whole font.
  finishFonts(pdf);

  const { bytes, warnings } = await pdf.sign({
    signer: input.signer,
    // No parentheses in the reason: @libpdf/core escapes them twice in the literal string.
    reason: `${input.certificate.test ? 'TEST - test-mode send, not a binding signature; ' : ''}Signed electronically; envelope ${input.certificate.envelopeId}`,
    subFilter: 'ETSI.CAdES.detached',
    // B-LTA's document timestamp is added below, with room for a real TSA's chain.
    level: level === 'B-LTA' ? 'B-LT' : level,
    timestampAuthority: tsa,
    revocationProvider: revocation,
    // A timestamp token brings the TSA's certificates along: make room for them.
    estimatedSize: tsa ? TIMESTAMP_ROOM : undefined,
  });
  if (level !== 'B-LTA') {
    checkLongTerm(revocation, warnings);
    return bytes;
  }
  const archived = await pdf.addTimestamp({ timestampAuthority: tsa!, longTermValidation: true, revocationProvider: revocation, estimatedSize: TIMESTAMP_ROOM });
  checkLongTerm(revocation, [...warnings, ...archived.warnings]);
  return archived.bytes;
}

export type RetimestampInput = { sealed: Uint8Array; tsa: NonNullable<SealPades['tsa']>; revocationTimeoutMs?: number };

/**
 * Archival: a new document timestamp over a sealed file, with fresh validation data for every
 * signature and timestamp already in it (PAdES B-LTA's renewal), appended as an incremental update:
 * the seal and the earlier timestamps stay byte for byte as they were.
 */
export async function retimestampDocument(input: RetimestampInput): Promise<Uint8Array> {
  const pdf = await PDF.load(input.sealed);
  const revocation = createSealRevocation({ timeoutMs: input.revocationTimeoutMs ?? 10_000 });
  const { bytes, warnings } = await pdf.addArchivalData({ timestampAuthority: createTimestampAuthority(input.tsa), revocationProvider: revocation, estimatedSize: TIMESTAMP_ROOM });
  checkLongTerm(revocation, warnings);
  return bytes;
}

/** The sealing certificate's issuer among the chain the P12 carries. */
function issuerOf(cert: Uint8Array, chain: Uint8Array[]): Uint8Array | undefined {
  const subject = new X509Certificate(cert);
  return chain.find((c) => subject.checkIssued(new X509Certificate(c)));
}

async function refuseRevoked(signer: Signer, revocation: SealRevocation): Promise<void> {
  const sources = revocationSources(signer.certificate);
  if (!sources.ocsp.length && !sources.crl.length) return;
  const issuer = issuerOf(signer.certificate, signer.certificateChain ?? []);
  if (!issuer) throw new AppError('INTERNAL_ERROR', "The sealing certificate's issuer is not in its P12: its revocation status cannot be checked (add the chain to SIGNING_CERT_P12_PATH)");
  const status = await revocation.statusOf(signer.certificate, issuer);
  if (status === 'revoked') throw new AppError('INTERNAL_ERROR', 'The sealing certificate is revoked (its issuer says so): nothing is sealed with it; replace SIGNING_CERT_P12_PATH');
  if (!status) throw new AppError('INTERNAL_ERROR', "The sealing certificate's revocation status could not be fetched (OCSP and CRL): the seal is retried");
}

/** B-LT's promise is the revocation data: a chain member found revoked, or data that could not be had, fails the seal. */
function checkLongTerm(revocation: SealRevocation | undefined, warnings: { code: string; message: string }[]): void {
  if (!revocation) return;
  if (revocation.revoked.length) throw new AppError('INTERNAL_ERROR', `A certificate of the seal or its timestamp is revoked: ${revocation.revoked.join('; ')}`);
  const missing = warnings.find((w) => w.code === 'REVOCATION_UNAVAILABLE');
  if (missing) throw new AppError('INTERNAL_ERROR', `Long-term validation data is incomplete (${missing.message}): the seal is retried`);
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
