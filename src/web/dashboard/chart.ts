/**
 * The spending chart: an inline SVG bar per UTC day, no script and no inline style (strict CSP). Bars
 * are placed in percentages of the chart's width and pixels of its fixed height, so the chart fills any
 * width while its labels keep their size. A screen reader gets the title and a one-line description
 * with the total, and everyone can open the same numbers as a table.
 */
import { escapeHtml, scrollTable } from './layout.js';

export type DaySpend = { date: string; micros: bigint };

const HEIGHT = 180;
const TOP = 18;
const BOTTOM = 22;
const PLOT = HEIGHT - TOP - BOTTOM;

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** `2025-03-07` → "7 Mar". */
export const shortDate = (iso: string): string => `${Number(iso.slice(8, 10))} ${MONTHS[Number(iso.slice(5, 7)) - 1]}`;

/** Dollars for people: "$0", "$1.20", "$0.000001" never shows up as "$0.00". */
export function dollars(micros: bigint): string {
  const negative = micros < 0n;
  const abs = negative ? -micros : micros;
  const cents = abs / 10_000n;
  const text = abs > 0n && cents === 0n ? '<$0.01' : `$${(cents / 100n).toLocaleString('en-US')}.${(cents % 100n).toString().padStart(2, '0')}`;
  return negative ? `−${text}` : text;
}

/** A round top for the axis: 1, 2 or 5 times a power of ten, in cents, above the highest day. */
function niceTop(maxMicros: bigint): bigint {
  const maxCents = Number(maxMicros / 10_000n);
  if (maxCents <= 0) return 100n * 10_000n;
  const pow = 10 ** Math.floor(Math.log10(maxCents));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((v) => v >= maxCents)!;
  return BigInt(step) * 10_000n;
}

const pct = (n: number): string => `${Math.round(n * 1000) / 1000}%`;

export function spendingChart(days: DaySpend[], id = 'spending'): string {
  const total = days.reduce((a, d) => a + (d.micros > 0n ? d.micros : 0n), 0n);
  const peak = days.reduce((best, d) => (d.micros > best.micros ? d : best), days[0] ?? { date: '', micros: 0n });
  const top = niceTop(peak.micros);
  const slot = 100 / Math.max(days.length, 1);
  const bars = days
    .map((d, i) => {
      const h = d.micros > 0n ? Math.max(2, Math.round((Number(d.micros) / Number(top)) * PLOT)) : 0;
      const label = `${shortDate(d.date)}: ${dollars(d.micros)}`;
      // A day with no spending is a 1-unit line on the baseline, so the 30 slots still read as days.
      return h > 0
        ? `<rect class="bar" x="${pct(i * slot + slot * 0.15)}" width="${pct(slot * 0.7)}" y="${TOP + PLOT - h}" height="${h}" rx="2"><title>${escapeHtml(label)}</title></rect>`
        : `<rect class="bar zero" x="${pct(i * slot + slot * 0.15)}" width="${pct(slot * 0.7)}" y="${TOP + PLOT - 1}" height="1"><title>${escapeHtml(label)}</title></rect>`;
    })
    .join('');
  const first = days[0]?.date;
  const last = days.at(-1)?.date;
  const middle = days[Math.floor(days.length / 2)]?.date;
  const summary =
    total > 0n
      ? `${dollars(total)} spent from ${first && shortDate(first)} to ${last && shortDate(last)}; the most in one day was ${dollars(peak.micros)} on ${shortDate(peak.date)}.`
      : `Nothing spent from ${first && shortDate(first)} to ${last && shortDate(last)}.`;
  const svg = `<svg class="chart" role="img" aria-labelledby="${id}-title ${id}-desc" width="100%" height="${HEIGHT}">
<title id="${id}-title">Spending per day, last ${days.length} days (UTC)</title>
<desc id="${id}-desc">${escapeHtml(summary)}</desc>
<line class="grid" x1="0" x2="100%" y1="${TOP}" y2="${TOP}"/><text class="axis-label" x="0" y="${TOP - 5}">${escapeHtml(dollars(top))}</text>
<line class="grid" x1="0" x2="100%" y1="${TOP + PLOT / 2}" y2="${TOP + PLOT / 2}"/><text class="axis-label" x="0" y="${TOP + PLOT / 2 - 5}">${escapeHtml(dollars(top / 2n))}</text>
${bars}
<line class="axis" x1="0" x2="100%" y1="${TOP + PLOT}" y2="${TOP + PLOT}"/>
${first ? `<text class="axis-label" x="0" y="${HEIGHT - 6}">${escapeHtml(shortDate(first))}</text>` : ''}
${middle ? `<text class="axis-label" x="50%" y="${HEIGHT - 6}" text-anchor="middle">${escapeHtml(shortDate(middle))}</text>` : ''}
${last ? `<text class="axis-label" x="100%" y="${HEIGHT - 6}" text-anchor="end">${escapeHtml(shortDate(last))}</text>` : ''}
</svg>`;
  const table = scrollTable(
    ['Day (UTC)', 'Spent'],
    [...days].reverse().map((d) => [`<time datetime="${escapeHtml(d.date)}">${escapeHtml(d.date)}</time>`, escapeHtml(dollars(d.micros))]),
    'Spending per day, newest first',
  );
  return `${svg}<details><summary>Show the numbers as a table</summary>${table}</details>`;
}
