/**
 * The fonts Signet draws with on sealed documents and certificates, so that names and values in any
 * common script print as written. A line that WinAnsiEncoding can hold (Latin-1: most names) is
 * drawn in a standard PDF font as before, which costs no embedding. Any other line is drawn in
 * DejaVu (Latin, Greek, Cyrillic, Arabic, Hebrew, Armenian, Georgian and more; Bitstream Vera
 * licence) with Noto Sans SC (OFL) for Chinese and Japanese characters, cut into runs each in the
 * first font of its role's chain that has its characters. Those fonts are embedded only when a run
 * needs them and subset when the document is saved (finishFonts): a few kilobytes, not the fonts'
 * megabytes.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { measureText, PDF, type Color, type EmbeddedFont, type PDFPage, type PdfRef, type Standard14FontName } from '@libpdf/core';

export type FontRole = 'regular' | 'bold' | 'script' | 'mono';

const require = createRequire(import.meta.url);
const dejavu = (file: string) => () => path.join(path.dirname(require.resolve('dejavu-fonts-ttf/package.json')), 'ttf', file);
// The condensed faces: about as wide as Helvetica, which stamps and the certificate were laid out
// for (the regular ones are 13% wider and would cut an email address in a marker-sized box).
const FILES = {
  sans: dejavu('DejaVuSansCondensed.ttf'),
  sansBold: dejavu('DejaVuSansCondensed-Bold.ttf'),
  /** Typed signatures and initials: the most handwriting-like of the DejaVu faces. */
  serifBoldItalic: dejavu('DejaVuSerifCondensed-BoldItalic.ttf'),
  /** Han, kana and CJK punctuation, which DejaVu lacks. Korean Hangul is in neither (shown as "?"). */
  cjk: () => require.resolve('@expo-google-fonts/noto-sans-sc/400Regular/NotoSansSC_400Regular.ttf'),
};
type FontFile = keyof typeof FILES;

/** Characters WinAnsiEncoding has beyond Latin-1 (positions 0x80-0x9F). */
const WIN_ANSI_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');

function encodable(ch: string): boolean {
  const c = ch.codePointAt(0) ?? 0;
  return (c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xff) || WIN_ANSI_EXTRA.has(ch);
}

/**
 * Makes text drawable with a standard-14 font (WinAnsiEncoding): accents that decompose keep their
 * base letter, anything else becomes "?" instead of an invisible .notdef glyph.
 */
export function winAnsi(text: string): string {
  let out = '';
  for (const ch of text) {
    if (encodable(ch)) out += ch;
    else {
      const base = ch.normalize('NFKD').replace(/[\u0300-\u036f]/g, '');
      out += base && [...base].every(encodable) ? base : '?';
    }
  }
  return out;
}

/** Each role's fonts, in order of preference. */
const CHAINS: Record<Exclude<FontRole, 'mono'>, FontFile[]> = {
  regular: ['sans', 'cjk'],
  bold: ['sansBold', 'sans', 'cjk'],
  script: ['serifBoldItalic', 'sansBold', 'cjk'],
};
/** The standard font of each role, for lines WinAnsiEncoding can hold. The hash column is hex: always Courier. */
const STANDARD: Record<FontRole, Standard14FontName> = { regular: 'Helvetica', bold: 'Helvetica-Bold', script: 'Times-BoldItalic', mono: 'Courier' };

/**
 * One parsed font per file for the life of the process (or sealing worker thread), loaded when a
 * line first needs it: parsing DejaVu Sans and building its character map costs tens of
 * milliseconds, Noto Sans SC's about a hundred (and 15 MB of heap), and a seal would otherwise pay
 * that again for every document. A Latin-1 document never loads any.
 */
const loaded = new Map<FontFile, EmbeddedFont>();

function load(file: FontFile): EmbeddedFont {
  let font = loaded.get(file);
  if (!font) {
    // A throwaway document parses the font; only its parsed program is reused.
    font = PDF.create().embedFont(readFileSync(FILES[file]()));
    loaded.set(file, font);
  }
  return font;
}

function has(file: FontFile, cp: number): boolean {
  return load(file).program.hasGlyph(cp);
}

type Internals = {
  fonts: { embeddedFonts?: Map<EmbeddedFont, PdfRef>; ctx?: { registry?: { allocateRef?: () => PdfRef } } };
  ctor: { fromTrueTypeFont?: (font: unknown, data: Uint8Array) => EmbeddedFont };
  program: { type?: string; font?: unknown };
};

/**
 * Registers a font with a document, sharing the parsed program of `template`. @libpdf/core 0.4.2
 * only embeds from bytes (parsing them again), so this uses what `pdf.fonts.embed` does inside;
 * if that ever changes shape, it falls back to embedding from bytes, correct but slower.
 */
function embedShared(pdf: PDF, template: EmbeddedFont): EmbeddedFont {
  const fonts = pdf.fonts as unknown as Internals['fonts'];
  const ctor = template.constructor as unknown as Internals['ctor'];
  const program = template.program as unknown as Internals['program'];
  const allocate = fonts.ctx?.registry?.allocateRef;
  if (!(fonts.embeddedFonts instanceof Map) || typeof allocate !== 'function' || typeof ctor.fromTrueTypeFont !== 'function' || program.type !== 'truetype' || !program.font) {
    return pdf.embedFont(template.data);
  }
  const font = ctor.fromTrueTypeFont(program.font, template.data);
  const ref = allocate.call(fonts.ctx!.registry);
  fonts.embeddedFonts.set(font, ref);
  font.setRef(ref);
  return font;
}

/** A stretch of text in one font: an embedded one (`file`) or a standard one. */
export type Run = { text: string; file?: FontFile; standard?: Standard14FontName };

/**
 * Cuts text (already in visual order, see text.ts) into runs of one font each. A line WinAnsi can
 * hold is one run in the role's standard font. Otherwise each character goes to the first font of
 * the chain that has it; spaces and combining marks stay in the current run's font when it has
 * them (a mark belongs with its letter). A character no font has becomes "?".
 */
export function runsOf(text: string, role: FontRole): Run[] {
  if (role === 'mono') return [{ text: winAnsi(text), standard: STANDARD.mono }];
  if ([...text].every(encodable)) return [{ text, standard: STANDARD[role] }];
  const chain = CHAINS[role];
  const runs: Run[] = [];
  let current: Run | undefined;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const sticky = current && /[\p{Z}\p{M}]/u.test(ch) && has(current.file!, cp);
    const file = sticky ? current!.file! : chain.find((f) => has(f, cp));
    const out = file ? ch : '?';
    const target = file ?? current?.file ?? chain[0];
    if (current?.file === target) current.text += out;
    else runs.push((current = { text: out, file: target }));
  }
  return runs;
}

/** Whether some font of the role can draw the character (for Arabic presentation forms). */
export function drawable(role: FontRole, ch: string): boolean {
  return role === 'mono' ? true : CHAINS[role].some((f) => has(f, ch.codePointAt(0)!));
}

function runWidth(run: Run, size: number): number {
  if (!run.file) return measureText(run.text, run.standard ?? STANDARD.regular, size);
  const font = load(run.file);
  let units = 0;
  for (const ch of run.text) units += font.getWidth(ch.codePointAt(0)!);
  return (units * size) / 1000;
}

/** Width in points of visual-order text drawn in the role's fonts. */
export function widthOf(text: string, role: FontRole, size: number): number {
  return runsOf(text, role).reduce((w, r) => w + runWidth(r, size), 0);
}

/**
 * Cap height and descent of the font a visual-order line is drawn in (its first run's), as
 * fractions of the size: to centre the line in a box.
 */
export function metricsOf(text: string, role: FontRole): { ascent: number; descent: number } {
  const first = runsOf(text, role)[0];
  if (first?.file) {
    const p = load(first.file).program;
    return { ascent: p.capHeight / p.unitsPerEm, descent: Math.abs(p.descent) / p.unitsPerEm };
  }
  const font = first?.standard ?? STANDARD[role];
  if (font.startsWith('Times')) return { ascent: 0.683, descent: 0.217 };
  if (font.startsWith('Courier')) return { ascent: 0.629, descent: 0.157 };
  return { ascent: 0.718, descent: 0.207 };
}

const perDocument = new WeakMap<PDF, Map<FontFile, EmbeddedFont>>();

/** The role's first font as embedded in this document (once per document). */
export function documentFont(pdf: PDF, role: Exclude<FontRole, 'mono'>): EmbeddedFont {
  return fontIn(pdf, CHAINS[role][0]);
}

function fontIn(pdf: PDF, file: FontFile): EmbeddedFont {
  let fonts = perDocument.get(pdf);
  if (!fonts) perDocument.set(pdf, (fonts = new Map()));
  let font = fonts.get(file);
  if (!font) fonts.set(file, (font = embedShared(pdf, load(file))));
  return font;
}

export type DrawOptions = { x: number; y: number; size: number; role: FontRole; color: Color; angle?: number };

/**
 * Draws visual-order text on one baseline from (x, y), run after run, turned by `angle` degrees
 * about its start. Answers the width drawn.
 */
export function drawRuns(pdf: PDF, page: PDFPage, text: string, o: DrawOptions): number {
  const rad = ((o.angle ?? 0) * Math.PI) / 180;
  let advance = 0;
  for (const run of runsOf(text, o.role)) {
    const at = { x: o.x + advance * Math.cos(rad), y: o.y + advance * Math.sin(rad) };
    const font = run.file ? fontIn(pdf, run.file) : (run.standard ?? STANDARD.regular);
    page.drawText(run.text, { ...at, font, size: o.size, color: o.color, rotate: o.angle ? { angle: o.angle, origin: at } : undefined });
    advance += runWidth(run, o.size);
  }
  return advance;
}

/**
 * Writes the embedded fonts as subsets of the glyphs drawn. Call before saving or signing: a save
 * without it (pdf.sign saves that way) embeds each whole font file.
 */
export function finishFonts(pdf: PDF): void {
  pdf.fonts.finalize(true);
}
