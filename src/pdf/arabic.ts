/**
 * Arabic-script contextual shaping with the Unicode presentation forms. @libpdf/core draws one glyph
 * per character and applies no OpenType shaping (GSUB), so محمد drawn as is would show four
 * unconnected isolated letters. Replacing each letter by its initial, medial, final or isolated
 * presentation form (and lam + alef by their ligature) gives connected, legible text with any font
 * that has those forms (DejaVu Sans has them all for Arabic, Persian and Urdu letters).
 */

type Forms = { isolated: string; final: string; initial?: string; medial?: string };

/**
 * Letter → forms, read off Unicode's own compatibility decompositions: each presentation form
 * normalises (NFKC) to its letter, and the forms of one letter are consecutive, in the order
 * isolated, final[, initial, medial]. Four forms: the letter joins on both sides; two: only to the
 * letter before it. The Presentation Forms-B block (basic Arabic) wins over Forms-A (the letters
 * other languages add), which repeats a few letters with odd subsets.
 */
const FORMS = ((): Map<string, Forms> => {
  const table = new Map<string, Forms>();
  const scan = (from: number, to: number) => {
    let base = '';
    let run: string[] = [];
    const flush = () => {
      if ([...base].length === 1 && !table.has(base) && (run.length === 2 || run.length === 4)) {
        table.set(base, { isolated: run[0], final: run[1], initial: run[2], medial: run[3] });
      }
      run = [];
    };
    for (let c = from; c <= to; c++) {
      const ch = String.fromCodePoint(c);
      const letter = ch.normalize('NFKC');
      if (letter !== base) {
        flush();
        base = letter === ch ? '' : letter;
      }
      if (base) run.push(ch);
    }
    flush();
  };
  scan(0xfe80, 0xfef4);
  scan(0xfb50, 0xfbff);
  return table;
})();

/** Lam followed by one of these alefs becomes one ligature: [isolated, final]. */
const LAM = '\u0644';
const LAM_ALEF: Record<string, [string, string]> = {
  '\u0622': ['\ufef5', '\ufef6'],
  '\u0623': ['\ufef7', '\ufef8'],
  '\u0625': ['\ufef9', '\ufefa'],
  '\u0627': ['\ufefb', '\ufefc'],
};

/** Tatweel and the zero-width joiner join on both sides without changing shape. */
const JOIN_CAUSING = new Set(['\u0640', '\u200d']);
const isTransparent = (ch: string) => /\p{Mn}|\p{Me}/u.test(ch);
const joinsToNext = (ch: string | undefined) => !!ch && (JOIN_CAUSING.has(ch) || !!FORMS.get(ch)?.initial);
const joinsToPrevious = (ch: string | undefined) => !!ch && (JOIN_CAUSING.has(ch) || FORMS.has(ch));

/** True when the text has a letter that shaping would change. */
export function needsShaping(text: string): boolean {
  return /[\u0620-\u06ff]/.test(text);
}

/**
 * Replaces Arabic-script letters (in logical order) by their contextual presentation forms.
 * `has` says whether a form can be drawn; a form that cannot stays the plain letter.
 */
export function shapeArabic(text: string, has: (ch: string) => boolean = () => true): string {
  if (!needsShaping(text)) return text;
  const chars = [...text];
  // Neighbours that matter for joining: the nearest characters that are not combining marks.
  const neighbour = (i: number, step: 1 | -1) => {
    for (let j = i + step; j >= 0 && j < chars.length; j += step) if (!isTransparent(chars[j])) return j;
    return -1;
  };
  let out = '';
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i];
    const forms = FORMS.get(ch);
    if (!forms) {
      out += ch;
      continue;
    }
    const p = neighbour(i, -1);
    const n = neighbour(i, 1);
    const joinsBefore = p >= 0 && joinsToNext(chars[p]);
    if (ch === LAM && n >= 0 && LAM_ALEF[chars[n]]) {
      const ligature = LAM_ALEF[chars[n]][joinsBefore ? 1 : 0];
      if (has(ligature)) {
        // Marks between the lam and the alef follow the ligature.
        out += ligature + chars.slice(i + 1, n).join('');
        i = n;
        continue;
      }
    }
    const joinsAfter = !!forms.initial && n >= 0 && joinsToPrevious(chars[n]);
    const form = joinsBefore && joinsAfter ? forms.medial : joinsBefore ? forms.final : joinsAfter ? forms.initial : forms.isolated;
    out += form && has(form) ? form : ch;
  }
  return out;
}
