import { rgb, type PDF, type PDFPage } from '@libpdf/core';
import { drawRuns, type FontRole } from './fonts.js';
import { displayToUser, placementToDisplayRect, placementToUserRect, type PageGeometry, type Rect } from './geometry.js';
import { embedSignatureImage } from './image.js';
import { fitText, fontMetrics } from './text.js';
import type { Placement, StampField } from './types.js';

const INK = rgb(0.05, 0.1, 0.3);
const WHITE = rgb(1, 1, 1);

/** Paints an opaque white box over a placement, padded by `pad` points on each side. */
export function coverPlacement(page: PDFPage, g: PageGeometry, p: Placement, pad = 1): void {
  const r = placementToUserRect(g, p);
  page.drawRectangle({ x: r.x - pad, y: r.y - pad, width: r.width + 2 * pad, height: r.height + 2 * pad, color: WHITE });
}

/**
 * A field box as a local drawing frame: `width` along the writing direction, `height` across it,
 * and where a local point lands on the page (user space). Writing runs left to right on the
 * displayed page, except in a box much taller than wide (a marker set vertically), where it runs
 * along the box: top to bottom on a /Rotate 90 page (text upright in user space looks like that),
 * bottom to top otherwise.
 */
type Frame = { width: number; height: number; at: (u: number, v: number) => { x: number; y: number }; angle: number };

function frameOf(g: PageGeometry, box: Rect): Frame {
  const vertical = box.height > box.width * 1.5;
  const turn = !vertical ? 0 : g.rotation === 90 ? -90 : 90;
  const toUser = (dx: number, dy: number) => displayToUser(g, dx, dy);
  const angle = (((g.rotation + turn) % 360) + 360) % 360;
  if (turn === 90) return { width: box.height, height: box.width, angle, at: (u, v) => toUser(box.x + box.width - v, box.y + u) };
  if (turn === -90) return { width: box.height, height: box.width, angle, at: (u, v) => toUser(box.x + v, box.y + box.height - u) };
  return { width: box.width, height: box.height, angle, at: (u, v) => toUser(box.x + u, box.y + v) };
}

/**
 * Draws one field's value inside its box, upright as the page is displayed (whatever its /Rotate).
 * Nothing is drawn for an empty value or an unchecked checkbox.
 */
export function stampField(pdf: PDF, page: PDFPage, g: PageGeometry, field: StampField): void {
  const box = placementToDisplayRect(g, field);
  if (box.width <= 0 || box.height <= 0) return;
  if ((field.type === 'SIGNATURE' || field.type === 'INITIALS') && field.image?.length) {
    drawImageInFrame(pdf, page, frameOf(g, box), field.image);
    return;
  }
  if (field.type === 'CHECKBOX') {
    if (field.value === 'true') drawCheck(page, g, box);
    return;
  }
  if (field.value === null || field.value.trim() === '') return;
  const role: FontRole = field.type === 'SIGNATURE' || field.type === 'INITIALS' ? 'script' : 'regular';
  drawTextInFrame(pdf, page, frameOf(g, box), field.value, role);
}

/**
 * Text on one line, as large as fits, centred across the writing direction; aligned to the start
 * of its direction (left, or right for a right-to-left value such as an Arabic name).
 */
function drawTextInFrame(pdf: PDF, page: PDFPage, f: Frame, value: string, role: FontRole): void {
  const { text, size, width, rtl } = fitText(value, role, f, { dir: 'auto' });
  if (!text) return;
  const m = fontMetrics(text, role);
  const padding = Math.min(2, f.width * 0.05);
  const baseline = (f.height - (m.ascent + m.descent) * size) / 2 + m.descent * size;
  const at = f.at(rtl ? Math.max(padding, f.width - padding - width) : padding, baseline);
  drawRuns(pdf, page, text, { x: at.x, y: at.y, size, role, color: INK, angle: f.angle });
}

/** A PNG or JPEG scaled to fit the frame, aspect ratio kept, centred. */
function drawImageInFrame(pdf: PDF, page: PDFPage, f: Frame, bytes: Uint8Array): void {
  const image = embedSignatureImage(pdf, bytes);
  const scale = Math.min(f.width / image.width, f.height / image.height);
  const width = image.width * scale;
  const height = image.height * scale;
  const at = f.at((f.width - width) / 2, (f.height - height) / 2);
  page.drawImage(image, { x: at.x, y: at.y, width, height, rotate: f.angle ? { angle: f.angle, origin: at } : undefined });
}

/** A check mark as two strokes in the largest square centred in the box. */
function drawCheck(page: PDFPage, g: PageGeometry, box: Rect): void {
  const s = Math.min(box.width, box.height) * 0.8;
  const x = box.x + (box.width - s) / 2;
  const y = box.y + (box.height - s) / 2;
  const pts = [
    [x + 0.12 * s, y + 0.52 * s],
    [x + 0.4 * s, y + 0.18 * s],
    [x + 0.9 * s, y + 0.85 * s],
  ].map(([px, py]) => displayToUser(g, px, py));
  const thickness = Math.max(0.8, s * 0.12);
  page.drawLine({ start: pts[0], end: pts[1], color: INK, thickness, lineCap: 'round' });
  page.drawLine({ start: pts[1], end: pts[2], color: INK, thickness, lineCap: 'round' });
}
