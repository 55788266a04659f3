import type { FieldType, Marker, PageBox, Placement } from './types.js';

/**
 * Smallest field per type, in percent of the displayed page: a marker's glyphs are one line of text
 * (about 1.4 % of a page, 8 px on a phone), far too small to sign in or tap. CHECKBOX and RADIO are
 * squares whose side is the larger of the marker's height and SQUARE_MIN_HEIGHT (in points of the
 * page's height, so the square is one on screen too). README.md lists these.
 */
export const FIELD_MIN_SIZE: Record<Exclude<FieldType, 'CHECKBOX' | 'RADIO'>, { width: number; height: number }> = {
  SIGNATURE: { width: 15, height: 4 },
  INITIALS: { width: 6, height: 2.5 },
  NAME: { width: 15, height: 2.5 },
  EMAIL: { width: 15, height: 2.5 },
  TEXT: { width: 15, height: 2.5 },
  DATE: { width: 10, height: 2.5 },
  NUMBER: { width: 8, height: 2.5 },
  DROPDOWN: { width: 10, height: 2.5 },
  FILE: { width: 15, height: 2.5 },
};
export const SQUARE_MIN_HEIGHT = 2.5;
/** Space kept between a field and the next marker on its line, in percent of the page width. */
const GAP = 0.5;

/** A box in points on the displayed page, laid along the marker's writing direction. */
type Box = { x: number; y: number; w: number; h: number };

/**
 * Where the fields placed by markers go: each starts where its marker starts and is centred on the
 * marker's line, at least its type's minimum size, no further right than the next marker on that
 * line (less a small gap) and inside the page, moved left rather than shrunk at the page's right
 * edge. A marker written vertically (a box much taller than wide, as stamp.ts decides) is sized the
 * same way along its own direction. Markers keep their glyph boxes: those are what sealing hides.
 */
export function markerFieldPlacements(markers: Marker[], pages: Pick<PageBox, 'width' | 'height'>[]): Placement[] {
  const out: Placement[] = markers.map((m) => ({ page: m.page, x: m.x, y: m.y, width: m.width, height: m.height }));
  const groups = new Map<string, number[]>();
  markers.forEach((m, i) => {
    const page = pages[m.page - 1];
    if (!page) return;
    const key = `${m.page}:${vertical(m, page) ? 'v' : 'h'}`;
    groups.set(key, [...(groups.get(key) ?? []), i]);
  });
  for (const [key, members] of groups) {
    const page = pages[markers[members[0]].page - 1];
    const turned = key.endsWith('v');
    // Vertical markers are laid out in a transposed frame: their "line" runs down the page.
    const frame = turned ? { width: page.height, height: page.width } : page;
    const boxes = members.map((i) => toFrame(markers[i], page, turned));
    for (const line of linesOf(boxes)) {
      let prevEnd = 0;
      line.forEach((bi, k) => {
        const next = line[k + 1];
        const box = sized(markers[members[bi]].type, boxes[bi], frame, next === undefined ? Infinity : boxes[next].x - (GAP / 100) * frame.width, prevEnd);
        prevEnd = box.x + box.w + (GAP / 100) * frame.width;
        out[members[bi]] = fromFrame(box, markers[members[bi]].page, page, turned);
      });
    }
  }
  return out;
}

/** One marker's field box in the frame: grown to its type's minimum, kept inside [left, right] and the page. */
function sized(type: FieldType, m: Box, frame: { width: number; height: number }, right: number, left: number): Box {
  const square = type === 'CHECKBOX' || type === 'RADIO';
  const min = square ? { width: 0, height: SQUARE_MIN_HEIGHT } : FIELD_MIN_SIZE[type];
  let h = Math.min(frame.height, Math.max(m.h, (min.height / 100) * frame.height));
  let w = square ? h : Math.max(m.w, (min.width / 100) * frame.width);
  let x = m.x;
  // Off the next marker: shrink, though never below the marker's own width (its glyphs are there).
  if (x + w > right) w = Math.max(m.w, right - x);
  // Inside the page: moved left (not over the field before it on the line), then shrunk if need be.
  if (x + w > frame.width) x = Math.max(Math.min(left, m.x), frame.width - w, 0);
  w = Math.min(w, frame.width - x);
  if (square) w = h = Math.min(w, h);
  const y = Math.min(Math.max(0, m.y + m.h / 2 - h / 2), frame.height - h);
  return { x, y, w, h };
}

/** Same line: their centres within half the smaller height. Each line left to right. */
function linesOf(boxes: Box[]): number[][] {
  const order = boxes.map((_, i) => i).sort((a, b) => boxes[a].y + boxes[a].h / 2 - (boxes[b].y + boxes[b].h / 2));
  const lines: number[][] = [];
  for (const i of order) {
    const line = lines.find((l) => l.some((j) => Math.abs(boxes[i].y + boxes[i].h / 2 - (boxes[j].y + boxes[j].h / 2)) <= Math.min(boxes[i].h, boxes[j].h) / 2));
    if (line) line.push(i);
    else lines.push([i]);
  }
  return lines.map((l) => l.sort((a, b) => boxes[a].x - boxes[b].x));
}

function vertical(m: Placement, page: Pick<PageBox, 'width' | 'height'>): boolean {
  return (m.height / 100) * page.height > 1.5 * ((m.width / 100) * page.width);
}

function toFrame(m: Placement, page: Pick<PageBox, 'width' | 'height'>, turned: boolean): Box {
  const b = { x: (m.x / 100) * page.width, y: (m.y / 100) * page.height, w: (m.width / 100) * page.width, h: (m.height / 100) * page.height };
  return turned ? { x: b.y, y: b.x, w: b.h, h: b.w } : b;
}

function fromFrame(b: Box, pageNumber: number, page: Pick<PageBox, 'width' | 'height'>, turned: boolean): Placement {
  const d = turned ? { x: b.y, y: b.x, w: b.h, h: b.w } : b;
  const pct = (v: number, size: number) => Math.round((v / size) * 100 * 10_000) / 10_000;
  return { page: pageNumber, x: pct(d.x, page.width), y: pct(d.y, page.height), width: pct(d.w, page.width), height: pct(d.h, page.height) };
}
