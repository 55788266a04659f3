import bidiModule from 'bidi-js';
import { shapeArabic } from './arabic.js';
import { drawable, metricsOf, widthOf, type FontRole } from './fonts.js';

// bidi-js is CommonJS whose module.exports is the factory, typed as if it were an ES default export.
const bidiFactory = ((bidiModule as { default?: unknown }).default ?? bidiModule) as typeof bidiModule.default;
const bidi = bidiFactory();

/**
 * Paragraph direction: `ltr` for our own lines (certificate labels around a name), `auto` for a
 * value that stands alone (a stamped field), which runs right to left when its first strong
 * character does.
 */
export type Direction = 'ltr' | 'auto';

/** One line as drawn: characters left to right on the page, and whether the paragraph is right to left. */
export type VisualLine = { text: string; rtl: boolean };

/**
 * Control characters and line breaks become spaces; NFC so that decomposed accents find their
 * glyphs. Explicit bidi embeddings, overrides and isolates go: a name must not be able to reorder
 * the text around it on a certificate (U+202E would show "evil" as "live").
 */
export function clean(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029]+/gu, ' ').replace(/[\u202a-\u202e\u2066-\u2069]/g, '').normalize('NFC');
}

/** Invisible format characters (joiners, direction marks, soft hyphens) have done their work once the line is shaped and ordered. */
const invisible = (text: string) => text.replace(/\p{Cf}/gu, '');

/**
 * A logical-order line (as typed) turned into what is drawn left to right: Arabic letters in their
 * joined forms, then the Unicode bidirectional algorithm's order, brackets mirrored in
 * right-to-left runs. (@libpdf/core draws glyphs in the order given and shapes nothing.)
 */
export function visualLine(logical: string, role: FontRole, dir: Direction = 'ltr'): VisualLine {
  const text = shapeArabic(clean(logical), (ch) => drawable(role, ch));
  if (!/[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]/.test(text)) return { text: invisible(text), rtl: false };
  const levels = bidi.getEmbeddingLevels(text, dir === 'ltr' ? 'ltr' : undefined);
  const reordered = bidi.getReorderedString(text, levels);
  // Reversing a right-to-left run swaps the halves of a surrogate pair: put them back.
  const visual = reordered.replace(/([\udc00-\udfff])([\ud800-\udbff])/g, '$2$1');
  return { text: invisible(visual), rtl: (levels.paragraphs[0]?.level ?? 0) % 2 === 1 };
}

/** Ascent and descent of the font a visual-order line is drawn in, as fractions of the font size. */
export const fontMetrics = metricsOf;

/** Width in points of a logical-order line. */
export function lineWidth(logical: string, role: FontRole, size: number, dir: Direction = 'ltr'): number {
  return widthOf(visualLine(logical, role, dir).text, role, size);
}

/**
 * The largest size (at most maxSize) at which the text fits in the box on one line; below minSize
 * the text is cut with an ellipsis instead (at its logical end). Answers the line in visual order.
 */
export function fitText(
  raw: string,
  role: FontRole,
  box: { width: number; height: number },
  opts: { maxSize?: number; minSize?: number; padding?: number; dir?: Direction } = {},
): VisualLine & { size: number; width: number } {
  const padding = opts.padding ?? Math.min(2, box.width * 0.05);
  const minSize = opts.minSize ?? 4;
  const available = Math.max(1, box.width - 2 * padding);
  let logical = clean(raw).trim();
  let line = visualLine(logical, role, opts.dir);
  const m = metricsOf(line.text, role);
  let size = Math.max(1, Math.min(opts.maxSize ?? 24, (box.height * 0.9) / (m.ascent + m.descent)));
  let width = widthOf(line.text, role, size);
  if (width > available) {
    size = Math.max(Math.min(size, minSize), size * (available / width) * 0.995);
    width = widthOf(line.text, role, size);
  }
  while (width > available + 0.01 && [...logical].length > 1) {
    logical = `${[...logical].slice(0, -2).join('').trimEnd()}…`;
    line = visualLine(logical, role, opts.dir);
    width = widthOf(line.text, role, size);
  }
  return { ...line, size, width };
}
