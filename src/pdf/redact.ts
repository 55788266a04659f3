import { Matrix, PdfArray, PdfRef, PdfStream, type PDF, type PDFPage } from '@libpdf/core';
import { operations, type Operand, type Operation } from './content-lexer.js';
import type { Rect } from './geometry.js';

/**
 * Removes the glyphs whose centre lies in one of the boxes (user space) from the page's content
 * stream, so a hidden marker is gone from the text layer too (copy, search, pdftotext), not only
 * painted over. Each removed glyph is replaced by the same horizontal move in a TJ array, so the rest
 * of the line stays exactly where it was. Every operation that shows no removed glyph keeps its
 * original bytes.
 *
 * Glyph positions follow @libpdf/core's text extractor (same fonts, widths and matrices), i.e. the
 * same boxes the markers were found by. Text inside form XObjects is not touched (it is not searched
 * for markers either). Answers how many glyphs were removed from each box.
 */
export function removeTextInBoxes(pdf: PDF, page: PDFPage, boxes: Rect[]): number[] {
  const removed = boxes.map(() => 0);
  if (!boxes.length) return removed;
  const resolveFont = fontResolver(page);
  const content = contentBytes(pdf, page);
  if (!resolveFont || !content) return removed;

  const edits: { start: number; end: number; bytes: Uint8Array }[] = [];
  const st = new TextState();
  const stack: TextState[] = [];
  for (const op of operations(content)) {
    const num = (i: number) => (typeof op.operands[i] === 'number' ? (op.operands[i] as number) : 0);
    switch (op.op) {
      case 'q':
        stack.push(st.clone());
        break;
      case 'Q': {
        const saved = stack.pop();
        if (saved) st.restore(saved);
        break;
      }
      case 'cm':
        st.ctm = new Matrix(num(0), num(1), num(2), num(3), num(4), num(5)).multiply(st.ctm);
        break;
      case 'BT':
        st.tm = Matrix.identity();
        st.tlm = Matrix.identity();
        break;
      case 'Tc':
        st.charSpacing = num(0);
        break;
      case 'Tw':
        st.wordSpacing = num(0);
        break;
      case 'Tz':
        st.horizontalScale = num(0);
        break;
      case 'TL':
        st.leading = num(0);
        break;
      case 'Ts':
        st.rise = num(0);
        break;
      case 'Tf': {
        const name = op.operands[0];
        if (name && typeof name === 'object' && 'name' in name) st.font = resolveFont(name.name);
        st.fontSize = num(1);
        break;
      }
      case 'Td':
        st.moveText(num(0), num(1));
        break;
      case 'TD':
        st.leading = -num(1);
        st.moveText(num(0), num(1));
        break;
      case 'Tm':
        st.tm = new Matrix(num(0), num(1), num(2), num(3), num(4), num(5));
        st.tlm = st.tm.clone();
        break;
      case 'T*':
        st.moveText(0, -st.leading);
        break;
      case 'Tj':
      case 'TJ':
      case "'":
      case '"': {
        const bytes = showText(st, op, boxes, removed);
        if (bytes) edits.push({ start: op.start, end: op.end, bytes });
        break;
      }
    }
  }
  if (!edits.length) return removed;

  const parts: Uint8Array[] = [];
  let at = 0;
  for (const e of edits) {
    parts.push(content.subarray(at, e.start), e.bytes);
    at = e.end;
  }
  parts.push(content.subarray(at));
  const total = parts.reduce((s, p) => s + p.length, 0);
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  // A fresh stream for this page only: content streams can be shared between pages.
  page.dict.set('Contents', pdf.createStream({}, out));
  return removed;
}

type Font = {
  subtype?: string;
  getWidth(code: number): number;
  toUnicode(code: number): string | null | undefined;
  descriptor?: { ascent?: number; descent?: number; fontBBox?: number[] } | null;
};

/** @libpdf/core's own per-page font resolver (not in its typings), so widths match text extraction. */
function fontResolver(page: PDFPage): ((name: string) => Font | null) | null {
  const make = (page as unknown as { createFontResolver?: () => (name: string) => Font | null }).createFontResolver;
  if (typeof make !== 'function') return null;
  try {
    return make.call(page);
  } catch {
    return null;
  }
}

function contentBytes(pdf: PDF, page: PDFPage): Uint8Array | null {
  const resolve = (o: unknown) => (o instanceof PdfRef ? pdf.getObject(o) : o);
  const contents = resolve(page.dict.get('Contents'));
  const streams: PdfStream[] = [];
  if (contents instanceof PdfStream) streams.push(contents);
  else if (contents instanceof PdfArray) {
    for (let i = 0; i < contents.length; i++) {
      const s = resolve(contents.at(i));
      if (s instanceof PdfStream) streams.push(s);
    }
  }
  if (!streams.length) return null;
  try {
    const decoded = streams.map((s) => s.getDecodedData());
    // Streams of one page are one content stream split anywhere: join them with a separator.
    const total = decoded.reduce((n, d) => n + d.length + 1, 0);
    const out = new Uint8Array(total);
    let o = 0;
    for (const d of decoded) {
      out.set(d, o);
      o += d.length;
      out[o++] = 0x0a;
    }
    return out;
  } catch {
    return null;
  }
}

class TextState {
  ctm = Matrix.identity();
  tm = Matrix.identity();
  tlm = Matrix.identity();
  font: Font | null = null;
  fontSize = 0;
  charSpacing = 0;
  wordSpacing = 0;
  horizontalScale = 100;
  leading = 0;
  rise = 0;

  moveText(tx: number, ty: number): void {
    this.tlm = this.tlm.translate(tx, ty);
    this.tm = this.tlm.clone();
  }
  clone(): TextState {
    const c = new TextState();
    Object.assign(c, this);
    return c;
  }
  /** Q restores the graphics state; the text matrices belong to the text object and stay. */
  restore(saved: TextState): void {
    const { tm, tlm } = this;
    Object.assign(this, saved);
    this.tm = tm;
    this.tlm = tlm;
  }
}

function codesOf(bytes: Uint8Array, font: Font): { code: number; bytes: Uint8Array }[] {
  const out: { code: number; bytes: Uint8Array }[] = [];
  if (font.subtype === 'Type0') {
    for (let i = 0; i < bytes.length; i += 2) {
      if (i + 1 < bytes.length) out.push({ code: (bytes[i] << 8) | bytes[i + 1], bytes: bytes.subarray(i, i + 2) });
      else out.push({ code: bytes[i], bytes: bytes.subarray(i, i + 1) });
    }
  } else for (let i = 0; i < bytes.length; i++) out.push({ code: bytes[i], bytes: bytes.subarray(i, i + 1) });
  return out;
}

/** Centre of the glyph at the current position, the way libpdf's extractor boxes it. */
function glyphCentre(st: TextState, font: Font, width: number): { x: number; y: number } {
  const d = font.descriptor;
  let ascent = d?.ascent;
  let descent = d?.descent;
  if (!ascent && !descent && d?.fontBBox) [, descent, , ascent] = d.fontBBox;
  ascent ||= 800;
  descent ??= -200;
  const w = (width / 1000) * st.fontSize * (st.horizontalScale / 100);
  const lo = (descent / 1000) * st.fontSize;
  const hi = lo + ((ascent - descent) / 1000) * st.fontSize;
  const base = st.ctm.transformPoint(st.tm.e, st.tm.f + st.rise);
  const cx = w / 2;
  const cy = (lo + hi) / 2;
  const tx = st.tm.a * cx + st.tm.c * cy;
  const ty = st.tm.b * cx + st.tm.d * cy;
  return { x: base.x + st.ctm.a * tx + st.ctm.c * ty, y: base.y + st.ctm.b * tx + st.ctm.d * ty };
}

const boxAt = (p: { x: number; y: number }, boxes: Rect[]) => boxes.findIndex((b) => p.x >= b.x - 0.5 && p.x <= b.x + b.width + 0.5 && p.y >= b.y - 0.5 && p.y <= b.y + b.height + 0.5);

/**
 * Walks one text-showing operation, advancing the text matrix; when some glyph falls in a box,
 * answers the operation rewritten as a TJ without those glyphs (and counts them per box).
 */
function showText(st: TextState, op: Operation, boxes: Rect[], counts: number[]): Uint8Array | null {
  const prefix: string[] = [];
  let items: Operand[];
  if (op.op === 'Tj' || op.op === "'") items = op.operands.slice(0, 1);
  else if (op.op === '"') {
    const [aw, ac] = op.operands;
    st.wordSpacing = typeof aw === 'number' ? aw : 0;
    st.charSpacing = typeof ac === 'number' ? ac : 0;
    prefix.push(`${fmt(st.wordSpacing)} Tw ${fmt(st.charSpacing)} Tc`);
    items = op.operands.slice(2, 3);
  } else items = Array.isArray(op.operands[0]) ? op.operands[0] : [];
  if (op.op === "'" || op.op === '"') {
    st.moveText(0, -st.leading);
    prefix.push('T*');
  }

  const font = st.font;
  const out: (Uint8Array[] | number)[] = [];
  let removed = 0;
  for (const item of items) {
    if (typeof item === 'number') {
      st.tm = st.tm.translate((-item / 1000) * st.fontSize * (st.horizontalScale / 100), 0);
      out.push(item);
      continue;
    }
    if (!item || typeof item !== 'object' || !('str' in item) || !font) continue;
    let run: Uint8Array[] = [];
    for (const { code, bytes } of codesOf(item.str, font)) {
      const width = font.getWidth(code) || 0;
      const uni = font.toUnicode(code);
      const centre = glyphCentre(st, font, width);
      // Word spacing as readers apply it (single-byte code 32) decides the gap we leave; libpdf's
      // extractor keys it on the Unicode space, which differs only for odd fonts.
      const spacing = st.charSpacing + (bytes.length === 1 && code === 32 ? st.wordSpacing : 0);
      const advance = ((width / 1000) * st.fontSize + st.charSpacing + (uni === ' ' || uni === '\u00a0' ? st.wordSpacing : 0)) * (st.horizontalScale / 100);
      const hit = st.fontSize !== 0 ? boxAt(centre, boxes) : -1;
      if (hit >= 0) {
        if (run.length) out.push(run);
        run = [];
        out.push(-(width + (spacing * 1000) / st.fontSize));
        counts[hit]++;
        removed++;
      } else run.push(bytes);
      st.tm = st.tm.translate(advance, 0);
    }
    if (run.length) out.push(run);
  }
  if (!removed) return null;

  const body = out.map((x) => (typeof x === 'number' ? fmt(x) : `<${hex(x)}>`)).join(' ');
  return new TextEncoder().encode(`${[...prefix, `[${body}] TJ`].join(' ')}\n`);
}

function hex(chunks: Uint8Array[]): string {
  let s = '';
  for (const c of chunks) for (const b of c) s += b.toString(16).padStart(2, '0');
  return s;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(4).replace(/0+$/, '').replace(/\.$/, '');
}
