// The editor's geometry, free of the DOM (tested with node --test). A placement is the API's: page, and
// x, y, width, height in percent of the page as displayed, origin at the top-left corner. Points are
// converted through the page's displayed size in points, so a move of 1 pt is exactly 1 pt on the PDF.

/** Default sizes in points, so a new field has the same size on an A4 page and on a Letter page. */
const SIZES = {
  SIGNATURE: [180, 45],
  INITIALS: [70, 35],
  DATE: [110, 22],
  TEXT: [160, 22],
  NAME: [160, 22],
  EMAIL: [180, 22],
  NUMBER: [90, 22],
  CHECKBOX: [16, 16],
};

/** The smallest field, in points: anything smaller cannot be seen, let alone signed. */
export const MIN_POINTS = 8;

const clamp = (v, lo, hi) => Math.min(Math.max(v, lo), hi);

/** Keeps a placement on its page: size first (at least MIN_POINTS, at most the page), then position. */
export function clampPlacement(p, pageSize) {
  const minW = (MIN_POINTS / pageSize.width) * 100;
  const minH = (MIN_POINTS / pageSize.height) * 100;
  const width = clamp(p.width, minW, 100);
  const height = clamp(p.height, minH, 100);
  return { page: p.page, x: clamp(p.x, 0, 100 - width), y: clamp(p.y, 0, 100 - height), width, height };
}

/** A new field of `type` with its top-left corner at (x, y) percent, kept on the page. */
export function newPlacement(type, page, x, y, pageSize) {
  const [w, h] = SIZES[type] ?? SIZES.TEXT;
  return clampPlacement({ page, x, y, width: (w / pageSize.width) * 100, height: (h / pageSize.height) * 100 }, pageSize);
}

export function moveByPoints(p, dx, dy, pageSize) {
  return clampPlacement({ ...p, x: p.x + (dx / pageSize.width) * 100, y: p.y + (dy / pageSize.height) * 100 }, pageSize);
}

export function resizeByPoints(p, dw, dh, pageSize) {
  const next = { ...p, width: p.width + (dw / pageSize.width) * 100, height: p.height + (dh / pageSize.height) * 100 };
  // Growing stops at the page's edge rather than pushing the field back.
  next.width = Math.min(next.width, 100 - p.x);
  next.height = Math.min(next.height, 100 - p.y);
  return clampPlacement(next, pageSize);
}

/** Moves by a screen delta measured on a page box `box` wide and tall (CSS pixels). */
export function moveByPixels(p, dx, dy, box, pageSize) {
  return clampPlacement({ ...p, x: p.x + (dx / box.width) * 100, y: p.y + (dy / box.height) * 100 }, pageSize);
}

export function resizeByPixels(p, dw, dh, box, pageSize) {
  return resizeByPoints(p, (dw / box.width) * pageSize.width, (dh / box.height) * pageSize.height, pageSize);
}

/**
 * Text boxes of a page in percent, from pdf.js's text content and the page's viewport at scale 1 (which
 * applies the page's rotation, as the API's placements do). Whitespace-only runs are not text to cover.
 */
export function textBoxes(items, viewport) {
  const boxes = [];
  for (const item of items) {
    if (!item.str || !item.str.trim()) continue;
    const [, , , , e, f] = item.transform;
    const height = item.height || Math.hypot(item.transform[2], item.transform[3]);
    const [x1, y1] = viewport.convertToViewportPoint(e, f);
    const [x2, y2] = viewport.convertToViewportPoint(e + item.width, f + height);
    const left = Math.min(x1, x2);
    const top = Math.min(y1, y2);
    boxes.push({ x: (left / viewport.width) * 100, y: (top / viewport.height) * 100, width: (Math.abs(x2 - x1) / viewport.width) * 100, height: (Math.abs(y2 - y1) / viewport.height) * 100 });
  }
  return boxes;
}

/** Whether a placement covers any of the text boxes (touching edges do not count). */
export function overlapsText(p, boxes) {
  return boxes.some((b) => p.x < b.x + b.width && b.x < p.x + p.width && p.y < b.y + b.height && b.y < p.y + p.height);
}

/** For people: a placement in points from the top-left corner. */
export function describePoints(p, pageSize) {
  const pt = (pct, size) => ((pct / 100) * size).toFixed(1);
  return `page ${p.page}, ${pt(p.x, pageSize.width)} pt from the left, ${pt(p.y, pageSize.height)} pt from the top, ${pt(p.width, pageSize.width)} × ${pt(p.height, pageSize.height)} pt`;
}
