import { PdfArray, PdfDict, PdfNumber, PdfRef, PdfStream, type PDF, type PDFPage, type PdfObject } from '@libpdf/core';
import type { PageBox, Placement } from './types.js';

export type Rotation = PageBox['rotation'];
export type Rect = { x: number; y: number; width: number; height: number };

/**
 * A page's visible area in user space (CropBox clipped to MediaBox, which is what viewers show) and
 * its /Rotate. Field placements are percentages of this area as displayed, so every conversion
 * between "what the signer sees" and PDF user space goes through here.
 */
export type PageGeometry = {
  llx: number;
  lly: number;
  urx: number;
  ury: number;
  rotation: Rotation;
  /** Displayed size in points, after /Rotate. */
  width: number;
  height: number;
};

type Quad = [number, number, number, number];
const LETTER: Quad = [0, 0, 612, 792];

/**
 * A page attribute, looked up the page tree as the PDF spec says (MediaBox, CropBox, Rotate and
 * Resources are inheritable). @libpdf/core 0.4.2's page getters read only the page's own dictionary
 * and take a box's upper-right corner for its size, so we read boxes ourselves.
 */
export function inheritedAttribute(pdf: PDF, page: PDFPage, key: string): PdfObject | undefined {
  const resolve = (ref: PdfRef) => pdf.getObject(ref);
  let dict: PdfDict | undefined = page.dict;
  for (let depth = 0; dict && depth < 64; depth++) {
    const value = dict.get(key, resolve);
    if (value !== undefined) return value;
    const parent = dict.get('Parent', resolve);
    dict = parent instanceof PdfDict ? parent : undefined;
  }
  return undefined;
}

function boxOf(pdf: PDF, value: PdfObject | undefined): Quad | null {
  if (!(value instanceof PdfArray) || value.length < 4) return null;
  const n: number[] = [];
  for (let i = 0; i < 4; i++) {
    const item = value.at(i, (ref) => pdf.getObject(ref));
    if (!(item instanceof PdfNumber) || !Number.isFinite(item.value)) return null;
    n.push(item.value);
  }
  const q: Quad = [Math.min(n[0], n[2]), Math.min(n[1], n[3]), Math.max(n[0], n[2]), Math.max(n[1], n[3])];
  return q[2] - q[0] > 0 && q[3] - q[1] > 0 ? q : null;
}

function rotationOf(value: PdfObject | undefined): Rotation {
  const v = value instanceof PdfNumber ? (((Math.round(value.value) % 360) + 360) % 360) : 0;
  return v === 90 || v === 180 || v === 270 ? v : 0;
}

export function pageGeometry(pdf: PDF, page: PDFPage): PageGeometry {
  const [mx0, my0, mx1, my1] = boxOf(pdf, inheritedAttribute(pdf, page, 'MediaBox')) ?? LETTER;
  const crop = boxOf(pdf, inheritedAttribute(pdf, page, 'CropBox'));
  let [llx, lly, urx, ury] = crop ? [Math.max(mx0, crop[0]), Math.max(my0, crop[1]), Math.min(mx1, crop[2]), Math.min(my1, crop[3])] : [mx0, my0, mx1, my1];
  // A CropBox outside the MediaBox is an error viewers answer with the MediaBox.
  if (urx - llx <= 0 || ury - lly <= 0) [llx, lly, urx, ury] = [mx0, my0, mx1, my1];
  const rotation = rotationOf(inheritedAttribute(pdf, page, 'Rotate'));
  const w = urx - llx;
  const h = ury - lly;
  const quarter = rotation === 90 || rotation === 270;
  return { llx, lly, urx, ury, rotation, width: quarter ? h : w, height: quarter ? w : h };
}

/**
 * Copies inherited attributes onto the page before anything draws on it: @libpdf/core adds drawing
 * resources to the page's own /Resources and would otherwise create an empty one that hides the
 * inherited fonts and images from the original content. Inherited resources are cloned (with their
 * sub-dictionaries) so additions stay on this page. A page with its own attributes is left alone.
 */
export function materializeInherited(pdf: PDF, page: PDFPage): void {
  const resolve = (ref: PdfRef) => pdf.getObject(ref);
  for (const key of ['MediaBox', 'CropBox', 'Rotate']) {
    if (page.dict.has(key)) continue;
    const value = inheritedAttribute(pdf, page, key);
    if (value !== undefined) page.dict.set(key, value);
  }
  if (page.dict.get('Resources', resolve) instanceof PdfDict) return;
  const inherited = inheritedAttribute(pdf, page, 'Resources');
  const resources = inherited instanceof PdfDict ? inherited.clone() : new PdfDict();
  for (const [name, value] of resources) {
    const sub = value instanceof PdfRef ? pdf.getObject(value) : value;
    if (sub instanceof PdfDict && !(sub instanceof PdfStream)) resources.set(name, sub.clone());
  }
  page.dict.set('Resources', resources);
}

export function pageBox(g: PageGeometry): PageBox {
  return { width: round(g.width, 3), height: round(g.height, 3), rotation: g.rotation };
}

/**
 * User space point → displayed point, origin at the displayed page's bottom-left (y up).
 * /Rotate turns the page clockwise when shown.
 */
export function userToDisplay(g: PageGeometry, x: number, y: number): { x: number; y: number } {
  switch (g.rotation) {
    case 90:
      return { x: y - g.lly, y: g.urx - x };
    case 180:
      return { x: g.urx - x, y: g.ury - y };
    case 270:
      return { x: g.ury - y, y: x - g.llx };
    default:
      return { x: x - g.llx, y: y - g.lly };
  }
}

/** Displayed point (bottom-left origin) → user space point; the inverse of userToDisplay. */
export function displayToUser(g: PageGeometry, x: number, y: number): { x: number; y: number } {
  switch (g.rotation) {
    case 90:
      return { x: g.urx - y, y: g.lly + x };
    case 180:
      return { x: g.urx - x, y: g.ury - y };
    case 270:
      return { x: g.llx + y, y: g.ury - x };
    default:
      return { x: g.llx + x, y: g.lly + y };
  }
}

function mapRect(r: Rect, f: (x: number, y: number) => { x: number; y: number }): Rect {
  const a = f(r.x, r.y);
  const b = f(r.x + r.width, r.y + r.height);
  const x = Math.min(a.x, b.x);
  const y = Math.min(a.y, b.y);
  return { x, y, width: Math.abs(b.x - a.x), height: Math.abs(b.y - a.y) };
}

export const userRectToDisplay = (g: PageGeometry, r: Rect): Rect => mapRect(r, (x, y) => userToDisplay(g, x, y));
export const displayRectToUser = (g: PageGeometry, r: Rect): Rect => mapRect(r, (x, y) => displayToUser(g, x, y));

/** A user-space box as SPEC.md's placement: percentages of the displayed page, origin top-left. */
export function userRectToPlacement(g: PageGeometry, r: Rect, page: number): Placement {
  const d = userRectToDisplay(g, r);
  const x0 = clamp(d.x, 0, g.width);
  const x1 = clamp(d.x + d.width, 0, g.width);
  const top = clamp(g.height - (d.y + d.height), 0, g.height);
  const bottom = clamp(g.height - d.y, 0, g.height);
  return {
    page,
    x: round((x0 / g.width) * 100, 4),
    y: round((top / g.height) * 100, 4),
    width: round(((x1 - x0) / g.width) * 100, 4),
    height: round(((bottom - top) / g.height) * 100, 4),
  };
}

/** A placement as a displayed box in points, origin at the displayed page's bottom-left (y up). */
export function placementToDisplayRect(g: PageGeometry, p: Placement): Rect {
  const width = (p.width / 100) * g.width;
  const height = (p.height / 100) * g.height;
  const x = (p.x / 100) * g.width;
  const top = (p.y / 100) * g.height;
  return { x, y: g.height - top - height, width, height };
}

export const placementToUserRect = (g: PageGeometry, p: Placement): Rect => displayRectToUser(g, placementToDisplayRect(g, p));

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

export function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}
