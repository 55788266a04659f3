/**
 * Writes samples/nda.pdf, the document README's first envelope sends: a one-page mutual NDA with a
 * `{{signature, rN}}` marker for each of two recipients, so a create needs no
 * field coordinates. Run `npx tsx samples/make-nda.ts` after changing the text; the PDF is committed.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { PDF, StandardFonts } from '@libpdf/core';

const pdf = PDF.create();
pdf.setTitle('Mutual non-disclosure agreement (sample)');
const page = pdf.addPage({ size: 'letter' });
const left = 72;
let y = 700;
const line = (text: string, size = 11, font: string = StandardFonts.Helvetica, gap = 16) => {
  page.drawText(text, { x: left, y, size, font });
  y -= gap;
};

line('Mutual Non-Disclosure Agreement', 20, StandardFonts.HelveticaBold, 34);
line('This sample agreement is bundled with Signet so that a first envelope needs no PDF of your own.', 10, StandardFonts.HelveticaOblique, 28);
const clauses: [string, string[]][] = [
  ['1. Parties', ['This agreement is made between the first party (r1) and the second party (r2).']],
  ['2. Confidential information', ['Anything one party discloses to the other, in any form, that is marked confidential', 'or that a reasonable person would understand to be confidential.']],
  ['3. Obligations', ["Each party keeps the other's confidential information secret, uses it only to evaluate", 'a possible business relationship, and shares it only with people who need to know it.']],
  ['4. Exclusions', ['Information that is public, already known, independently developed, or received', 'lawfully from a third party is not confidential information.']],
  ['5. Term', ['These obligations last two years from the date of the last signature below.']],
];
for (const [head, text] of clauses) {
  line(head, 11, StandardFonts.HelveticaBold, 15);
  for (const t of text) line(t, 10.5, StandardFonts.Helvetica, 14);
  y -= 10;
}

// Two signature blocks side by side: the markers are replaced by fields where they stand.
y -= 30;
const blocks = [
  { x: left, who: 'First party', n: 1 },
  { x: 330, who: 'Second party', n: 2 },
];
for (const b of blocks) {
  page.drawText(b.who, { x: b.x, y, size: 12, font: StandardFonts.HelveticaBold });
  page.drawText(`Signature: {{signature, r${b.n}}}`, { x: b.x, y: y - 40, size: 11, font: StandardFonts.Helvetica });
  page.drawLine({ start: { x: b.x + 55, y: y - 44 }, end: { x: b.x + 210, y: y - 44 }, thickness: 0.5 });
}

writeFileSync(path.join(import.meta.dirname, 'nda.pdf'), await pdf.save());
