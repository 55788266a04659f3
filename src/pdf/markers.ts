import { PdfArray, PdfRef, PdfStream, type PDF, type PDFPage } from '@libpdf/core';
import { readChecked } from './decode-guard.js';
import { pageGeometry, userRectToPlacement, type PageGeometry, type Rect } from './geometry.js';
import { FIELD_TYPES, type BadMarker, type FieldType, type Marker } from './types.js';

/** `{{<type>, r<n>}}`: lowercase SPEC.md field type, recipient n in request order (1-based). */
const TYPE_BY_NAME = new Map<string, FieldType>(FIELD_TYPES.map((t) => [t.toLowerCase(), t]));

// Anything between double braces on one line is a candidate; what is inside decides marker, bad
// marker, or someone else's placeholder (`{{ client_name }}` is left alone).
const CANDIDATE = /\{\{([^{}\n]{0,80}?)\}\}/g;
const WELL_FORMED = /^([a-z_]+)\s*,\s*r(\d{1,4})$/i;

type Char = { char: string; box: Rect; fontSize: number; seq: number };

/**
 * Finds markers on every page. @libpdf/core's findText groups glyphs into lines by their user-space
 * baseline, so it finds markers drawn upright in user space, across text runs and font changes, but
 * not text that is upright only once /Rotate is applied (each glyph then sits on its own "line").
 * We therefore take the same extracted glyphs and group them ourselves in the reading directions
 * that occur, the displayed one first, and match the marker pattern on those lines.
 *
 * A page whose content streams cannot be decoded (a filter fails, a decode limit is reached, Flate
 * data is damaged) refuses the file, naming the page: it would be stored and shown to signers as
 * something else than its author made. Only the text extraction may fail (a font we cannot read):
 * that page then has no markers we can place, and fields come by coordinates.
 */
export function findMarkers(pdf: PDF): { markers: Marker[]; badMarkers: BadMarker[] } {
  const markers: Marker[] = [];
  const badMarkers: BadMarker[] = [];
  pdf.getPages().forEach((page, i) => {
    const content = readChecked(`Page ${i + 1} of the PDF`, () => pageContent(pdf, page));
    let found;
    try {
      found = findPageMarkers(page, pageGeometry(pdf, page), i + 1, content);
    } catch {
      return;
    }
    markers.push(...found.markers);
    badMarkers.push(...found.badMarkers);
  });
  return { markers, badMarkers };
}

/** `content`: the page's content streams, decoded already (they are not decoded again). */
export function findPageMarkers(page: PDFPage, geometry: PageGeometry, pageNumber: number, content?: Uint8Array): { markers: Marker[]; badMarkers: BadMarker[] } {
  const chars = pageChars(content ? withContent(page, content) : page);
  const markers: Marker[] = [];
  const badMarkers: BadMarker[] = [];
  if (!chars.some((c) => c.char === '{')) return { markers, badMarkers };
  const used = new Set<number>();
  for (const orientation of orientationsOf(chars, geometry.rotation)) {
    for (const line of linesIn(chars, orientation)) {
      for (const m of line.text.matchAll(CANDIDATE)) {
        const members = line.charAt.slice(m.index, m.index + m[0].length).filter((c): c is Char => c !== null);
        // The same glyphs can line up in two directions only by accident; the first reading wins.
        if (members.some((c) => used.has(c.seq))) continue;
        const verdict = classify(m[1]);
        if (!verdict) continue;
        members.forEach((c) => used.add(c.seq));
        const text = m[0];
        if ('reason' in verdict) {
          badMarkers.push({ page: pageNumber, text, reason: verdict.reason });
          continue;
        }
        const box = union(members.map((c) => c.box));
        markers.push({ ...userRectToPlacement(geometry, box, pageNumber), type: verdict.type, recipientIndex: verdict.recipient, text });
      }
    }
  }
  // Reading order on the displayed page: by line (bottoms within half a box height), then left to right.
  markers.sort((a, b) => {
    const dy = a.y + a.height - (b.y + b.height);
    return Math.abs(dy) > Math.min(a.height, b.height) / 2 ? dy : a.x - b.x;
  });
  return { markers, badMarkers };
}

/**
 * The reading directions worth grouping the page in: the displayed one and user space's always, and
 * any other that a `{{` runs along (two consecutive opening braces in content order give the
 * direction of their line), so an ordinary page is grouped once or twice, not four times.
 */
function orientationsOf(chars: Char[], rotation: number): number[] {
  const wanted = new Set<number>([rotation, 0]);
  const bySeq = new Map(chars.map((c) => [c.seq, c]));
  for (const c of chars) {
    if (c.char !== '{') continue;
    const next = bySeq.get(c.seq + 1);
    if (next?.char !== '{') continue;
    const dx = next.box.x + next.box.width / 2 - (c.box.x + c.box.width / 2);
    const dy = next.box.y + next.box.height / 2 - (c.box.y + c.box.height / 2);
    wanted.add(Math.abs(dx) >= Math.abs(dy) ? (dx >= 0 ? 0 : 180) : dy >= 0 ? 90 : 270);
  }
  return [...wanted];
}

function classify(inner: string): { type: FieldType; recipient: number } | { reason: string } | null {
  const body = inner.trim();
  const ok = WELL_FORMED.exec(body);
  if (ok) {
    const type = TYPE_BY_NAME.get(ok[1].toLowerCase());
    if (!type) return { reason: unknownType(ok[1]) };
    const recipient = Number(ok[2]);
    if (recipient < 1) return { reason: 'recipients are numbered from r1' };
    return { type, recipient };
  }
  const comma = body.indexOf(',');
  const head = (comma < 0 ? body : body.slice(0, comma)).trim();
  if (comma < 0) {
    // `{{signature}}` is a marker missing its recipient; `{{client_name}}` is not ours.
    return TYPE_BY_NAME.has(head.toLowerCase()) ? { reason: 'missing the recipient: write it as {{<type>, r<n>}}, e.g. {{signature, r1}}' } : null;
  }
  if (!TYPE_BY_NAME.has(head.toLowerCase())) return { reason: unknownType(head) };
  return { reason: `malformed recipient "${body.slice(comma + 1).trim()}": expected r<n>, e.g. r1` };
}

function unknownType(name: string): string {
  return `unknown field type "${name}"; expected one of ${[...TYPE_BY_NAME.keys()].join(', ')}`;
}

/** The page's content streams decoded and joined, as @libpdf/core's text extraction reads them. */
function pageContent(pdf: PDF, page: PDFPage): Uint8Array {
  const resolve = (v: unknown) => (v instanceof PdfRef ? pdf.getObject(v) : v);
  const contents = resolve(page.dict.get('Contents'));
  const streams = contents instanceof PdfArray ? [...Array(contents.length).keys()].map((i) => resolve(contents.at(i))) : [contents];
  const parts = streams.filter((s): s is PdfStream => s instanceof PdfStream).map((s) => s.getDecodedData());
  if (parts.length === 1) return parts[0];
  // Separated by a space, as libpdf joins them: a token never runs from one stream into the next.
  const joined = new Uint8Array(Math.max(0, parts.reduce((n, p) => n + p.length + 1, -1)));
  let at = 0;
  for (const p of parts) {
    joined.set(p, at);
    at += p.length;
    if (at < joined.length) joined[at++] = 0x20;
  }
  return joined;
}

/**
 * The page, but whose content bytes are these: its text extraction (which reads them through the
 * private getContentBytes of @libpdf/core 0.4.2) does not decode them again.
 */
function withContent(page: PDFPage, content: Uint8Array): PDFPage {
  return Object.assign(Object.create(page) as PDFPage, { getContentBytes: () => content });
}

/** The page's glyphs as @libpdf/core extracts them, without the spaces it synthesises between words. */
function pageChars(page: PDFPage): Char[] {
  const out: Char[] = [];
  for (const line of page.extractText().lines) {
    for (const span of line.spans) {
      for (const c of span.chars) {
        // Real glyphs carry an integer stream index; synthesised spaces get x.5 (or none).
        if (c.sequenceIndex !== undefined && !Number.isInteger(c.sequenceIndex)) continue;
        out.push({ char: c.char, box: c.bbox, fontSize: c.fontSize || c.bbox.height, seq: c.sequenceIndex ?? out.length });
      }
    }
  }
  return out;
}

type Line = { text: string; charAt: (Char | null)[] };

/** Rotates a user-space box so that text running in `orientation` (degrees CCW) reads left to right. */
function oriented(box: Rect, orientation: number): Rect {
  const { x, y, width: w, height: h } = box;
  switch (orientation) {
    case 90:
      return { x: y, y: -(x + w), width: h, height: w };
    case 180:
      return { x: -(x + w), y: -(y + h), width: w, height: h };
    case 270:
      return { x: -(y + h), y: x, width: h, height: w };
    default:
      return box;
  }
}

/** Groups glyphs into lines for one reading direction: same bottom edge, then left to right. */
function linesIn(chars: Char[], orientation: number): Line[] {
  const items = chars.map((c) => ({ c, b: oriented(c.box, orientation) }));
  items.sort((p, q) => p.b.y - q.b.y || p.b.x - q.b.x);
  const groups: (typeof items)[] = [];
  let current: typeof items = [];
  let anchor = 0;
  for (const it of items) {
    const tolerance = Math.max(0.5, 0.25 * Math.min(it.b.height, current[0]?.b.height ?? it.b.height));
    if (current.length && it.b.y - anchor > tolerance) {
      groups.push(current);
      current = [];
    }
    if (!current.length) anchor = it.b.y;
    current.push(it);
  }
  if (current.length) groups.push(current);

  return groups.map((group) => {
    group.sort((p, q) => p.b.x - q.b.x || p.c.seq - q.c.seq);
    let text = '';
    const charAt: (Char | null)[] = [];
    let prev: (typeof group)[number] | undefined;
    for (const it of group) {
      if (prev) {
        const gap = it.b.x - (prev.b.x + prev.b.width);
        // A word gap without a space glyph (positioned words) still separates words.
        if (gap > 0.2 * Math.min(prev.c.fontSize, it.c.fontSize) && !/\s/.test(prev.c.char) && !/\s/.test(it.c.char)) {
          text += ' ';
          charAt.push(null);
        }
      }
      text += it.c.char;
      // Ligatures and the like extract as several UTF-16 units: keep indexes aligned with the text.
      for (let k = 0; k < it.c.char.length; k++) charAt.push(it.c);
      prev = it;
    }
    return { text, charAt };
  });
}

function union(boxes: Rect[]): Rect {
  const x0 = Math.min(...boxes.map((b) => b.x));
  const y0 = Math.min(...boxes.map((b) => b.y));
  const x1 = Math.max(...boxes.map((b) => b.x + b.width));
  const y1 = Math.max(...boxes.map((b) => b.y + b.height));
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}
