import { measureText, type Standard14FontName } from '@libpdf/core';

/** Characters WinAnsiEncoding has beyond Latin-1 (positions 0x80-0x9F). */
const WIN_ANSI_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');

function encodable(ch: string): boolean {
  const c = ch.codePointAt(0) ?? 0;
  return (c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xff) || WIN_ANSI_EXTRA.has(ch);
}

/**
 * Makes text drawable with a standard-14 font (WinAnsiEncoding): accents that decompose keep their
 * base letter, anything else becomes "?" instead of an invisible .notdef glyph. Control characters
 * and line breaks become spaces.
 */
export function winAnsi(text: string): string {
  let out = '';
  for (const ch of text.replace(/[\r\n\t]+/g, ' ')) {
    if (encodable(ch)) out += ch;
    else {
      const base = ch.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
      out += base && [...base].every(encodable) ? base : /\p{Cc}/u.test(ch) ? ' ' : '?';
    }
  }
  return out;
}

/** Ascent and descent of the standard fonts we draw with, as fractions of the font size. */
export function fontMetrics(font: Standard14FontName): { ascent: number; descent: number } {
  if (font.startsWith('Times')) return { ascent: 0.683, descent: 0.217 };
  if (font.startsWith('Courier')) return { ascent: 0.629, descent: 0.157 };
  return { ascent: 0.718, descent: 0.207 };
}

/**
 * The largest size (at most maxSize) at which the text fits in the box on one line; below minSize
 * the text is cut with an ellipsis instead.
 */
export function fitText(raw: string, font: Standard14FontName, box: { width: number; height: number }, opts: { maxSize?: number; minSize?: number; padding?: number } = {}): { text: string; size: number; width: number } {
  const padding = opts.padding ?? Math.min(2, box.width * 0.05);
  const minSize = opts.minSize ?? 4;
  const available = Math.max(1, box.width - 2 * padding);
  const m = fontMetrics(font);
  let size = Math.max(1, Math.min(opts.maxSize ?? 24, (box.height * 0.9) / (m.ascent + m.descent)));
  let text = winAnsi(raw).trim();
  let width = measureText(text, font, size);
  if (width > available) {
    size = Math.max(Math.min(size, minSize), size * (available / width) * 0.995);
    width = measureText(text, font, size);
  }
  while (width > available + 0.01 && text.length > 1) {
    text = `${text.slice(0, -2).trimEnd()}…`;
    width = measureText(text, font, size);
  }
  return { text, size, width };
}
