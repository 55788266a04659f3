// test-lane: once (the editor's browser geometry module; opens no database)
// The field editor's geometry (src/web/editor/assets/geometry.js): DOM-free, run as the browser runs it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
// @ts-expect-error: a browser module without types
import * as geo from '../src/web/editor/assets/geometry.js';

const LETTER = { width: 612, height: 792 };
const pt = (pct: number, size: number) => (pct / 100) * size;

test('a keyboard step is exactly one point on the page, and ten with Shift', () => {
  const p = { page: 1, x: 10, y: 10, width: 20, height: 5 };
  const one = geo.moveByPoints(p, 1, 0, LETTER);
  assert.ok(Math.abs(pt(one.x, LETTER.width) - (pt(10, LETTER.width) + 1)) < 1e-9);
  const ten = geo.moveByPoints(p, 0, 10, LETTER);
  assert.ok(Math.abs(pt(ten.y, LETTER.height) - (pt(10, LETTER.height) + 10)) < 1e-9);
});

test('placements stay on the page: moved against an edge, grown to it, never below the minimum size', () => {
  const p = { page: 1, x: 90, y: 95, width: 20, height: 10 };
  const kept = geo.clampPlacement(p, LETTER);
  assert.equal(kept.x + kept.width, 100);
  assert.equal(kept.y + kept.height, 100);
  const grown = geo.resizeByPoints({ page: 1, x: 80, y: 10, width: 10, height: 5 }, 1000, 0, LETTER);
  assert.equal(grown.x, 80);
  assert.equal(grown.x + grown.width, 100);
  const shrunk = geo.resizeByPoints({ page: 1, x: 10, y: 10, width: 5, height: 5 }, -1000, -1000, LETTER);
  assert.ok(Math.abs(pt(shrunk.width, LETTER.width) - geo.MIN_POINTS) < 1e-9);
});

test('new fields have their size in points whatever the page, and start where they were dropped', () => {
  const sig = geo.newPlacement('SIGNATURE', 2, 12.5, 70, LETTER);
  assert.deepEqual([sig.page, sig.x, sig.y], [2, 12.5, 70]);
  assert.ok(Math.abs(pt(sig.width, LETTER.width) - 180) < 1e-9);
  const a4 = geo.newPlacement('SIGNATURE', 1, 0, 0, { width: 595, height: 842 });
  assert.ok(Math.abs(pt(a4.height, 842) - 45) < 1e-9);
});

test('overlap with text: text boxes from pdf.js items (PDF space, bottom-up) through the viewport', () => {
  // A viewport at scale 1 of an unrotated Letter page: y flips.
  const viewport = { width: 612, height: 792, convertToViewportPoint: (x: number, y: number) => [x, 792 - y] };
  const boxes = geo.textBoxes([{ str: 'Client signature', transform: [9, 0, 0, 9, 64, 194], width: 70, height: 9 }, { str: '  ', transform: [9, 0, 0, 9, 300, 300], width: 5, height: 9 }], viewport);
  assert.equal(boxes.length, 1);
  assert.ok(Math.abs(pt(boxes[0].y, 792) - (792 - 203)) < 1e-9);
  const over = { page: 1, x: pt(0, 1) + (60 / 612) * 100, y: ((792 - 210) / 792) * 100, width: 30, height: 3 };
  assert.equal(geo.overlapsText(over, boxes), true);
  assert.equal(geo.overlapsText({ ...over, y: 10 }, boxes), false);
});
