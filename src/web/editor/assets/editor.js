// The field editor. Every change is saved through the field API as it is made (POST, PATCH, DELETE under
// the draft's /fields), so the page holds no second model: what it shows is what the API has.
import * as geo from './geometry.js';

const root = document.getElementById('editor');
const state = JSON.parse(document.getElementById('editor-state').textContent);
const abs = (path) => new URL(path, location.href).href;
const csrf = document.querySelector('meta[name="csrf-token"]')?.content;
// A prepare link carries its own credential; the dashboard's session cookie goes with X-CSRF-Token.
const prepareToken = root.dataset.prepareToken;
const statusEl = document.getElementById('status');
const selectionEl = document.getElementById('selection');
const recipientSelect = document.getElementById('recipient');
const requiredBox = document.getElementById('required');
const pagesEl = document.getElementById('pages');

const LABELS = { SIGNATURE: 'Signature', INITIALS: 'Initials', DATE: 'Date', TEXT: 'Text', NAME: 'Name', EMAIL: 'Email', NUMBER: 'Number', CHECKBOX: 'Checkbox', RADIO: 'Radio', DROPDOWN: 'Dropdown' };
const recipientIndex = (email) => Math.max(0, state.recipients.findIndex((r) => r.email.toLowerCase() === email.toLowerCase()));

const say = (text) => (statusEl.textContent = text);

async function api(method, url, body, headers = {}) {
  const res = await fetch(url, {
    method,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...(csrf && { 'x-csrf-token': csrf }), ...(prepareToken && { 'x-prepare-token': prepareToken }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) {
    const err = await res.json().catch(() => ({}));
    throw new Error(err.error ?? `The server answered ${res.status}`);
  }
  return res.status === 204 ? null : res.json();
}

/** page number → { view, size: {width, height} in points, boxes: text boxes in percent } */
const pages = new Map();
/** fieldId → field { fieldId, type, recipientEmail, p: placement, el, save: Promise chain } */
const fields = new Map();
let selected = null;
let resizeMode = false;

const placementOf = (f) => ({ page: f.page, x: f.positionXPercent, y: f.positionYPercent, width: f.widthPercent, height: f.heightPercent });
const bodyOf = (p) => ({ page: p.page, positionXPercent: p.x, positionYPercent: p.y, widthPercent: p.width, heightPercent: p.height });

function labelOf(f) {
  const r = state.recipients[recipientIndex(f.recipientEmail)];
  return `${LABELS[f.type] ?? f.type} for ${r?.name ?? f.recipientEmail}`;
}

function draw(f) {
  const pg = pages.get(f.p.page);
  if (!pg) return;
  if (f.el.parentElement !== pg.view.overlay) pg.view.overlay.append(f.el);
  f.el.style.left = `${f.p.x}%`;
  f.el.style.top = `${f.p.y}%`;
  f.el.style.width = `${f.p.width}%`;
  f.el.style.height = `${f.p.height}%`;
  const overlaps = geo.overlapsText(f.p, pg.boxes);
  f.el.classList.toggle('overlaps', overlaps);
  f.warn.hidden = !overlaps;
  // The name comes from the field's own text (its type, then this, then "Covers text" when shown), so what is seen is what is read.
  f.desc.textContent = ` ${labelOf(f).slice((LABELS[f.type] ?? f.type).length)}, ${geo.describePoints(f.p, pg.size)}${f === selected && resizeMode ? ', resizing' : ''}.`;
  f.el.dataset.x = String(f.p.x);
  f.el.dataset.y = String(f.p.y);
  if (f === selected) showPlacement(f, pg.size);
  if (f === selected) selectionEl.textContent = `${labelOf(f)}: ${geo.describePoints(f.p, pg.size)}${overlaps ? '. It covers text on the page: move it if the text should stay readable.' : ''}`;
}

/** X, Y, width and height in points: a way to place a field without dragging (WCAG 2.5.7). */
const placementBox = document.getElementById('placement');
const inputs = [...placementBox.querySelectorAll('input')];
function showPlacement(f, size) {
  placementBox.disabled = false;
  for (const input of inputs) {
    const key = input.dataset.key;
    const total = key === 'x' || key === 'width' ? size.width : size.height;
    if (document.activeElement !== input) input.value = ((f.p[key] / 100) * total).toFixed(1);
  }
}
for (const input of inputs) {
  input.addEventListener('change', () => {
    const f = selected;
    const value = Number(input.value);
    if (!f || !Number.isFinite(value)) return;
    const size = pages.get(f.p.page).size;
    const key = input.dataset.key;
    const total = key === 'x' || key === 'width' ? size.width : size.height;
    f.p = geo.clampPlacement({ ...f.p, [key]: (value / total) * 100 }, size);
    draw(f);
    input.value = ((f.p[key] / 100) * total).toFixed(1);
    save(f);
  });
}

function select(f) {
  if (selected && selected !== f) selected.el.classList.remove('selected', 'resizing');
  selected = f;
  if (f) {
    f.el.classList.add('selected');
    f.el.classList.toggle('resizing', resizeMode);
    draw(f);
  } else {
    selectionEl.textContent = 'None: select a field on a page.';
    placementBox.disabled = true;
  }
}

/** Saves a field's placement; saves of one field run in order, the last one wins. */
function save(f) {
  const p = { ...f.p };
  f.saving = (f.saving ?? Promise.resolve())
    .then(() => api('PATCH', `${root.dataset.fieldsUrl}/${f.fieldId}`, bodyOf(p)))
    .then(() => say(`Saved: ${labelOf(f)}.`))
    .catch((err) => say(`Not saved: ${err.message}`));
  return f.saving;
}

// A keyboard move is saved once the keys stop: the field waiting for that save, and its timer.
let keyTimer = 0;
let keyPending = null;
/** Saves the keyboard move still waiting for its timer, if any, now. */
function flushKeySave() {
  clearTimeout(keyTimer);
  const f = keyPending;
  keyPending = null;
  if (f) save(f);
}
function onKey(f, event) {
  const pg = pages.get(f.p.page);
  const step = event.shiftKey ? 10 : 1;
  const moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
  if (moves[event.key]) {
    event.preventDefault();
    const [dx, dy] = moves[event.key];
    f.p = resizeMode ? geo.resizeByPoints(f.p, dx, dy, pg.size) : geo.moveByPoints(f.p, dx, dy, pg.size);
    draw(f);
    // One save once the keys stop, not one per key press; another field's move waiting is saved now, not dropped.
    if (keyPending !== f) flushKeySave();
    clearTimeout(keyTimer);
    keyPending = f;
    keyTimer = setTimeout(flushKeySave, 300);
  } else if (event.key === 'r' || event.key === 'R') {
    event.preventDefault();
    resizeMode = !resizeMode;
    select(f);
    say(resizeMode ? 'Resizing: arrow keys change the width and height. Press R again to move.' : 'Moving: arrow keys move the field.');
  } else if (event.key === 'Escape' && resizeMode) {
    resizeMode = false;
    select(f);
    say('Moving: arrow keys move the field.');
  } else if (event.key === 'Delete' || event.key === 'Backspace') {
    event.preventDefault();
    remove(f);
  }
}

async function remove(f) {
  // A keyboard move waiting to be saved is moot once the field is gone.
  if (keyPending === f) {
    clearTimeout(keyTimer);
    keyPending = null;
  }
  try {
    await api('DELETE', `${root.dataset.fieldsUrl}/${f.fieldId}`);
    fields.delete(f.fieldId);
    f.el.remove();
    if (selected === f) select(null);
    say(`Removed: ${labelOf(f)}.`);
  } catch (err) {
    say(`Not removed: ${err.message}`);
  }
}

/** Drags with any pointer (mouse, pen, touch): a move from the body, a resize from the corner handle. */
function onPointerDown(f, event) {
  if (event.button !== 0) return;
  const pg = pages.get(f.p.page);
  const box = pg.view.overlay.getBoundingClientRect();
  const resizing = event.target.classList.contains('handle');
  const start = { x: event.clientX, y: event.clientY, p: { ...f.p } };
  let moved = false;
  f.el.setPointerCapture(event.pointerId);
  f.el.focus();
  select(f);
  const move = (e) => {
    const dx = e.clientX - start.x;
    const dy = e.clientY - start.y;
    if (Math.abs(dx) + Math.abs(dy) > 2) moved = true;
    f.p = resizing ? geo.resizeByPixels(start.p, dx, dy, box, pg.size) : geo.moveByPixels(start.p, dx, dy, box, pg.size);
    draw(f);
  };
  const end = (e) => {
    f.el.removeEventListener('pointermove', move);
    f.el.removeEventListener('pointerup', end);
    f.el.removeEventListener('pointercancel', end);
    // A cancelled touch (a scroll took over) puts the field back where it was.
    if (e.type === 'pointercancel') {
      f.p = start.p;
      draw(f);
    } else if (moved) save(f);
  };
  f.el.addEventListener('pointermove', move);
  f.el.addEventListener('pointerup', end);
  f.el.addEventListener('pointercancel', end);
}

function mount(dto) {
  const el = document.createElement('div');
  el.className = `field r${recipientIndex(dto.recipientEmail) % 8}`;
  el.tabIndex = 0;
  el.setAttribute('role', 'button');
  el.setAttribute('aria-describedby', 'tools-help');
  el.dataset.testid = `field-${dto.fieldId}`;
  el.dataset.type = dto.type;
  const name = document.createElement('span');
  name.className = 'name';
  name.textContent = LABELS[dto.type] ?? dto.type;
  const warn = document.createElement('span');
  warn.className = 'warn';
  warn.textContent = 'Covers text';
  warn.hidden = true;
  const desc = document.createElement('span');
  desc.className = 'sr-only';
  const handle = document.createElement('span');
  handle.className = 'handle';
  handle.setAttribute('aria-hidden', 'true');
  el.append(name, desc, warn, handle);
  const f = { fieldId: dto.fieldId, type: dto.type, recipientEmail: dto.recipientEmail, p: placementOf(dto), el, warn, desc };
  fields.set(f.fieldId, f);
  el.addEventListener('pointerdown', (e) => onPointerDown(f, e));
  el.addEventListener('keydown', (e) => onKey(f, e));
  el.addEventListener('focus', () => select(f));
  draw(f);
  return f;
}

async function add(type, pageNumber, x, y) {
  const pg = pages.get(pageNumber);
  const r = state.recipients[Number(recipientSelect.value)];
  const p = geo.newPlacement(type, pageNumber, x, y, pg.size);
  try {
    const { fields: created } = await api('POST', root.dataset.fieldsUrl, { fields: [{ type, recipientEmail: r.email, required: requiredBox.checked, ...bodyOf(p) }] });
    const f = mount(created[0]);
    f.el.focus();
    say(`Added: ${labelOf(f)}, page ${pageNumber}.`);
  } catch (err) {
    say(`Not added: ${err.message}`);
  }
}

/** The page most in view: where the keyboard's "add" puts a field. */
function pageInView() {
  let best = 1;
  let bestArea = -1;
  for (const [n, pg] of pages) {
    const r = pg.view.element.getBoundingClientRect();
    const area = Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
    if (area > bestArea) [best, bestArea] = [n, area];
  }
  return best;
}

/** A palette button: pressed, it adds to the page in view; dragged, it drops where the pointer is let go. */
function wireTool(button) {
  const type = button.dataset.type;
  let dragged = false;
  button.addEventListener('click', () => {
    if (dragged) return void (dragged = false);
    const n = pageInView();
    // A little apart from the last one added, so fields added in a row do not hide each other.
    const offset = (fields.size % 8) * 4;
    add(type, n, 10 + offset, 10 + offset);
  });
  button.addEventListener('pointerdown', (event) => {
    if (event.button !== 0) return;
    const start = { x: event.clientX, y: event.clientY };
    let ghost = null;
    button.setPointerCapture(event.pointerId);
    const move = (e) => {
      if (!ghost && Math.abs(e.clientX - start.x) + Math.abs(e.clientY - start.y) < 5) return;
      if (!ghost) {
        ghost = document.createElement('div');
        ghost.className = 'ghost';
        ghost.textContent = LABELS[type];
        document.body.append(ghost);
      }
      ghost.style.left = `${e.clientX}px`;
      ghost.style.top = `${e.clientY}px`;
    };
    const end = (e) => {
      button.removeEventListener('pointermove', move);
      button.removeEventListener('pointerup', end);
      button.removeEventListener('pointercancel', end);
      if (!ghost) return;
      ghost.remove();
      dragged = true;
      if (e.type === 'pointercancel') return;
      const pageEl = document.elementsFromPoint(e.clientX, e.clientY).find((x) => x.classList?.contains('page'));
      if (!pageEl) return say('Drop the field on a page.');
      const box = pageEl.getBoundingClientRect();
      // The field's top-left corner goes where the pointer was let go.
      add(type, Number(pageEl.dataset.page), ((e.clientX - box.left) / box.width) * 100, ((e.clientY - box.top) / box.height) * 100);
    };
    button.addEventListener('pointermove', move);
    button.addEventListener('pointerup', end);
    button.addEventListener('pointercancel', end);
  });
}

/** Before leaving by "Done", the saves still under way finish, so the page the link opens shows them. */
document.getElementById('done')?.addEventListener('click', async (event) => {
  event.preventDefault();
  // Read before waiting: once the event has been dispatched, currentTarget is null.
  const { href } = event.currentTarget;
  flushKeySave();
  await Promise.all([...fields.values()].map((f) => f.saving));
  location.assign(href);
});

async function send() {
  const button = document.getElementById('send');
  button.disabled = true;
  say('Sending…');
  try {
    flushKeySave();
    await Promise.all([...fields.values()].map((f) => f.saving));
    await api('POST', root.dataset.sendUrl, {}, { 'idempotency-key': crypto.randomUUID() });
    say('Sent: the invitations are on their way.');
    root.dataset.sent = 'true';
    if (root.dataset.doneUrl) location.assign(root.dataset.doneUrl);
  } catch (err) {
    say(`Not sent: ${err.message}`);
    button.disabled = false;
  }
}

async function start() {
  const { openPdf, createPageViews } = await import(abs(`${root.dataset.signingBase}pdf-view.js`));
  const bytes = new Uint8Array(await (await fetch(root.dataset.documentUrl)).arrayBuffer());
  const doc = await openPdf(abs(root.dataset.pdfjsBase), bytes);
  pagesEl.replaceChildren();
  const views = await createPageViews(pagesEl, doc);
  await Promise.all(
    views.map(async (view) => {
      const content = await view.page.getTextContent();
      pages.set(view.n, { view, size: { width: view.base.width, height: view.base.height }, boxes: geo.textBoxes(content.items, view.base) });
    }),
  );
  for (const f of state.fields) mount(f);
  document.querySelectorAll('.tool').forEach(wireTool);
  // A template has no Send: its page ends with a plain "Done" link.
  document.getElementById('send')?.addEventListener('click', send);
  root.dataset.ready = 'true';
}

start().catch((err) => {
  say(`The editor could not start: ${err.message}`);
  console.error(err);
});
