// The "adopt your signature" dialog: draw (pointer events: mouse, pen, touch), type, or upload.
// Every path ends in a PNG or JPEG data URL cropped to the ink, which is what the page shows and sends.
import { t } from './i18n.js';

const INK = '#1b2a6b';
const SCRIPT_FONTS = '"Z003", "URW Chancery L", "Segoe Script", "Brush Script MT", "Snell Roundhand", "Apple Chancery", cursive';
/** The export canvas: large enough to stay sharp when stamped, small enough to keep the request light. */
const OUT_W = 900;
const OUT_H = 300;
const MAX_UPLOAD_BYTES = 5 * 1024 * 1024;
/** Keeps the JSON body of POST /complete well under the server's 1 MB limit. */
const MAX_DATA_URL = 600_000;

const $ = (id) => document.getElementById(id);

/** Crops a canvas to its non-transparent pixels plus a margin; null when nothing is drawn. */
function cropToInk(canvas, background = null) {
  const ctx = canvas.getContext('2d');
  const { width, height } = canvas;
  const data = ctx.getImageData(0, 0, width, height).data;
  let minX = width;
  let minY = height;
  let maxX = -1;
  let maxY = -1;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (data[(y * width + x) * 4 + 3] > 16) {
        if (x < minX) minX = x;
        if (x > maxX) maxX = x;
        if (y < minY) minY = y;
        if (y > maxY) maxY = y;
      }
    }
  }
  if (maxX < 0) return null;
  const pad = 8;
  const x = Math.max(0, minX - pad);
  const y = Math.max(0, minY - pad);
  const w = Math.min(width, maxX + pad + 1) - x;
  const h = Math.min(height, maxY + pad + 1) - y;
  const out = document.createElement('canvas');
  out.width = w;
  out.height = h;
  const octx = out.getContext('2d');
  if (background) {
    octx.fillStyle = background;
    octx.fillRect(0, 0, w, h);
  }
  octx.drawImage(canvas, x, y, w, h, 0, 0, w, h);
  return out;
}

/** Draw tab: strokes are kept in page-independent units (0..1 of the pad) so a resize can redraw them. */
function createPad(canvas) {
  const strokes = [];
  let current = null;

  const drawStrokes = (ctx, width, height, lineWidth) => {
    ctx.clearRect(0, 0, width, height);
    ctx.strokeStyle = INK;
    ctx.fillStyle = INK;
    ctx.lineCap = 'round';
    ctx.lineJoin = 'round';
    ctx.lineWidth = lineWidth;
    for (const s of strokes) {
      if (s.length === 1) {
        ctx.beginPath();
        ctx.arc(s[0].x * width, s[0].y * height, lineWidth / 2, 0, Math.PI * 2);
        ctx.fill();
        continue;
      }
      ctx.beginPath();
      ctx.moveTo(s[0].x * width, s[0].y * height);
      // Quadratic curves through the midpoints give a smooth line from jittery pointer samples.
      for (let i = 1; i < s.length - 1; i++) {
        const mx = ((s[i].x + s[i + 1].x) / 2) * width;
        const my = ((s[i].y + s[i + 1].y) / 2) * height;
        ctx.quadraticCurveTo(s[i].x * width, s[i].y * height, mx, my);
      }
      const last = s[s.length - 1];
      ctx.lineTo(last.x * width, last.y * height);
      ctx.stroke();
    }
  };

  const redraw = () => drawStrokes(canvas.getContext('2d'), canvas.width, canvas.height, Math.max(2, canvas.width / 180));

  const resize = () => {
    const rect = canvas.getBoundingClientRect();
    if (!rect.width) return;
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(rect.width * dpr);
    canvas.height = Math.round(rect.height * dpr);
    redraw();
  };

  const point = (e) => {
    const rect = canvas.getBoundingClientRect();
    return { x: Math.min(1, Math.max(0, (e.clientX - rect.left) / rect.width)), y: Math.min(1, Math.max(0, (e.clientY - rect.top) / rect.height)) };
  };

  canvas.addEventListener('pointerdown', (e) => {
    if (e.button !== 0 && e.pointerType === 'mouse') return;
    e.preventDefault();
    canvas.setPointerCapture(e.pointerId);
    current = [point(e)];
    strokes.push(current);
    redraw();
  });
  canvas.addEventListener('pointermove', (e) => {
    if (!current) return;
    e.preventDefault();
    const events = typeof e.getCoalescedEvents === 'function' ? e.getCoalescedEvents() : [e];
    for (const ev of events.length ? events : [e]) current.push(point(ev));
    redraw();
  });
  const end = () => {
    current = null;
    canvas.dispatchEvent(new Event('change'));
  };
  canvas.addEventListener('pointerup', end);
  canvas.addEventListener('pointercancel', end);

  return {
    resize,
    isEmpty: () => strokes.length === 0,
    clear() {
      strokes.length = 0;
      redraw();
    },
    /** A PNG data URL of the drawing, cropped to the ink; null when empty. */
    export() {
      if (!strokes.length) return null;
      const out = document.createElement('canvas');
      out.width = OUT_W;
      out.height = OUT_H;
      drawStrokes(out.getContext('2d'), OUT_W, OUT_H, OUT_W / 150);
      return cropToInk(out)?.toDataURL('image/png') ?? null;
    },
  };
}

/** Renders typed text in a script face onto a canvas, as large as fits. */
function renderTyped(canvas, text, width, height) {
  const ctx = canvas.getContext('2d');
  canvas.width = width;
  canvas.height = height;
  ctx.clearRect(0, 0, width, height);
  if (!text) return;
  let size = height * 0.6;
  ctx.font = `italic ${size}px ${SCRIPT_FONTS}`;
  const measured = ctx.measureText(text).width;
  if (measured > width * 0.92) size *= (width * 0.92) / measured;
  ctx.font = `italic ${size}px ${SCRIPT_FONTS}`;
  ctx.fillStyle = INK;
  // Sits on the pad's signing line (drawn by CSS at 78% of the height).
  ctx.textBaseline = 'alphabetic';
  ctx.textAlign = 'center';
  ctx.fillText(text, width / 2, height * 0.74);
}

/** Reads an uploaded image and re-encodes it (size-capped, metadata dropped) as PNG or JPEG. */
async function readUpload(file) {
  if (!['image/png', 'image/jpeg'].includes(file.type)) throw new Error(t('signing-dialog.pngOrJpeg'));
  if (file.size > MAX_UPLOAD_BYTES) throw new Error(t('signing-dialog.tooLarge'));
  let bitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    throw new Error(t('signing-dialog.unreadable'));
  }
  const scale = Math.min(1, OUT_W / bitmap.width, OUT_H / bitmap.height);
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, Math.round(bitmap.width * scale));
  canvas.height = Math.max(1, Math.round(bitmap.height * scale));
  const ctx = canvas.getContext('2d');
  const jpeg = file.type === 'image/jpeg';
  if (jpeg) {
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
  }
  ctx.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  bitmap.close?.();
  let url = jpeg ? canvas.toDataURL('image/jpeg', 0.9) : canvas.toDataURL('image/png');
  if (url.length > MAX_DATA_URL) url = canvas.toDataURL('image/jpeg', 0.8);
  if (url.length > MAX_DATA_URL) throw new Error(t('signing-dialog.tooDetailed'));
  return url;
}

/**
 * Wires the dialog in the page shell. `open(defaultName, {keyboard})` shows it and resolves with
 * `{kind: 'drawn'|'typed'|'uploaded', text?, image}` or null when cancelled (Cancel or Escape).
 * Opened from the keyboard it starts on Type, which needs no pointer, unless the person chose a tab before.
 */
export function createSignatureDialog() {
  const dialog = $('signature-dialog');
  const tabs = ['draw', 'type', 'upload'].map((name) => ({ name, tab: $(`signature-tab-${name}`), panel: $(`signature-panel-${name}`) }));
  const pad = createPad($('signature-draw-canvas'));
  const typeInput = $('signature-type-input');
  const typePreview = $('signature-type-preview');
  const uploadInput = $('signature-upload-input');
  const uploadPreview = $('signature-upload-preview');
  const error = $('signature-error');
  let active = 'draw';
  // Set once the person picks a tab: their choice then wins over the keyboard default.
  let chosen = false;
  let uploaded = null;
  let settle = null;

  const showError = (message) => {
    error.textContent = message ?? '';
  };

  const select = (name, focus = false) => {
    active = name;
    for (const t of tabs) {
      const on = t.name === name;
      t.tab.setAttribute('aria-selected', String(on));
      t.tab.tabIndex = on ? 0 : -1;
      t.panel.hidden = !on;
      if (on && focus) t.tab.focus();
    }
    showError('');
    if (name === 'draw') pad.resize();
    if (name === 'type') drawTypedPreview();
  };

  const drawTypedPreview = () => {
    const rect = typePreview.getBoundingClientRect();
    const dpr = window.devicePixelRatio || 1;
    if (rect.width) renderTyped(typePreview, typeInput.value.trim(), Math.round(rect.width * dpr), Math.round(rect.height * dpr));
  };

  // Tabs follow the WAI-ARIA pattern: arrows, Home and End move between them and select.
  tabs.forEach((t, i) => {
    t.tab.addEventListener('click', () => {
      chosen = true;
      select(t.name);
    });
    t.tab.addEventListener('keydown', (e) => {
      const moves = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 };
      if (!(e.key in moves)) return;
      e.preventDefault();
      chosen = true;
      select(tabs[(moves[e.key] + tabs.length) % tabs.length].name, true);
    });
  });

  $('signature-draw-clear').addEventListener('click', () => pad.clear());
  $('signature-draw-canvas').addEventListener('change', () => showError(''));
  typeInput.addEventListener('input', () => {
    showError('');
    drawTypedPreview();
  });
  typeInput.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      apply();
    }
  });
  uploadInput.addEventListener('change', async () => {
    uploaded = null;
    uploadPreview.hidden = true;
    showError('');
    const file = uploadInput.files?.[0];
    if (!file) return;
    try {
      uploaded = await readUpload(file);
      uploadPreview.src = uploaded;
      uploadPreview.hidden = false;
    } catch (err) {
      showError(err.message);
    }
  });
  window.addEventListener('resize', () => {
    if (!dialog.open) return;
    if (active === 'draw') pad.resize();
    if (active === 'type') drawTypedPreview();
  });

  const finish = (result) => {
    const done = settle;
    settle = null;
    if (dialog.open) dialog.close();
    done?.(result);
  };

  function apply() {
    if (active === 'draw') {
      const image = pad.export();
      if (!image) return showError(t('signing-dialog.drawFirst'));
      return finish({ kind: 'drawn', image });
    }
    if (active === 'type') {
      const text = typeInput.value.trim();
      if (!text) return showError(t('signing-dialog.typeFirst'));
      const out = document.createElement('canvas');
      renderTyped(out, text, OUT_W, OUT_H);
      const cropped = cropToInk(out);
      if (!cropped) return showError(t('signing-dialog.typeFirst'));
      return finish({ kind: 'typed', text, image: cropped.toDataURL('image/png') });
    }
    if (!uploaded) return showError(t('signing-dialog.uploadFirst'));
    return finish({ kind: 'uploaded', image: uploaded });
  }

  $('signature-apply').addEventListener('click', apply);
  $('signature-cancel').addEventListener('click', () => finish(null));
  // Escape closes a modal dialog natively; resolve the pending open() as cancelled.
  dialog.addEventListener('close', () => finish(null));

  return {
    open(defaultName, { keyboard = false } = {}) {
      if (!typeInput.value) typeInput.value = defaultName ?? '';
      showError('');
      dialog.showModal();
      select(keyboard && !chosen ? 'type' : active);
      tabs.find((t) => t.name === active).tab.focus();
      return new Promise((resolve) => {
        settle = resolve;
      });
    },
  };
}
