// The recipient's fields, overlaid on the page boxes at their percentages, with their values and checks.
import { buildFileControl, wireFileControl } from './attachment-field.js';
import { t } from './i18n.js';
import { labelCaption, readOnlyName, ruleMessage, visibleIds } from './field-rules.js';

const AUTO = new Set(['NAME', 'EMAIL', 'DATE']);
const SIGN = new Set(['SIGNATURE', 'INITIALS']);
// As the server accepts it (a comma is taken as the decimal point and sent as one).
const NUMBER = /^-?\d+(\.\d+)?$/;

/** Initials of a typed signature, as the server derives them for INITIALS fields. */
const initialsOf = (text) =>
  text
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase())
    .join('')
    .slice(0, 4);

/** What a field is called in its label ("Signature 2, page 1, required"): RADIO and DROPDOWN are both a choice. */
const nounOf = (type) => t('signing-widgets.noun', { type: type === 'DROPDOWN' ? 'RADIO' : type });

/** The widget's control: an element carrying the field's test id, focus and aria-invalid. */
function buildControl(field, label) {
  const testid = `field-${field.fieldId}`;
  const options = Array.isArray(field.options) ? field.options : [];
  switch (field.type) {
    case 'SIGNATURE':
    case 'INITIALS': {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'control sign';
      button.textContent = field.type === 'SIGNATURE' ? t('signing-widgets.sign') : t('signing-widgets.initial');
      // The name starts with the visible word, so speech users can say what they see (WCAG 2.5.3).
      button.setAttribute('aria-label', t('signing-widgets.actionLabel', { action: button.textContent, label }));
      return button;
    }
    case 'NAME':
    case 'EMAIL':
    case 'DATE': {
      const out = document.createElement('output');
      out.className = 'control auto';
      out.textContent = field.value ?? (field.type === 'DATE' ? t('signing-widgets.dateOfSigning') : '');
      label = t('signing-widgets.autoLabel', { label, value: out.textContent });
      out.setAttribute('aria-label', label);
      out.dataset.testid = testid;
      return out;
    }
    case 'TEXT':
    case 'NUMBER': {
      const input = document.createElement('input');
      input.type = 'text';
      input.className = 'control text';
      input.maxLength = field.type === 'NUMBER' ? 40 : 1000;
      input.autocomplete = 'off';
      input.spellcheck = false;
      input.placeholder = field.placeholder ?? nounOf(field.type);
      if (field.type === 'NUMBER') input.inputMode = 'decimal';
      if (field.validation?.maxLength) input.maxLength = field.validation.maxLength;
      if (field.value) input.value = field.value;
      if (field.readOnly) {
        // The sender's value: shown, stamped as given, never editable (the server refuses another one).
        input.readOnly = true;
        input.classList.add('read-only');
        input.setAttribute('aria-label', readOnlyName(field.label ?? label, field.value ?? ''));
      }
      return input;
    }
    case 'CHECKBOX': {
      const input = document.createElement('input');
      input.type = 'checkbox';
      input.className = 'control check';
      input.checked = field.value === 'true';
      return input;
    }
    case 'RADIO': {
      const group = document.createElement('div');
      group.className = 'control radios';
      group.setAttribute('role', 'radiogroup');
      options.forEach((option, i) => {
        const item = document.createElement('label');
        item.className = 'radio';
        const input = document.createElement('input');
        input.type = 'radio';
        input.name = `field-${field.fieldId}`;
        input.value = option;
        input.checked = field.value === option;
        input.dataset.testid = `field-${field.fieldId}-option-${i}`;
        input.setAttribute('aria-label', option);
        item.append(input, document.createTextNode(option));
        group.append(item);
      });
      return group;
    }
    case 'FILE':
      return buildFileControl(field);
    case 'DROPDOWN': {
      const select = document.createElement('select');
      select.className = 'control select';
      select.append(new Option(t('signing-widgets.choose'), ''));
      for (const option of options) select.append(new Option(option, option, false, field.value === option));
      return select;
    }
    default: {
      const out = document.createElement('output');
      out.className = 'control auto';
      out.textContent = field.value ?? '';
      return out;
    }
  }
}

/**
 * Places the fields on `views` (from createPageViews) and returns the handle the page drives:
 * values to submit, validation, the adopted signature, focus movement, and locking after the outcome.
 * `zoom` (zoom.js) enlarges a small field that gets focus from the keyboard or the guide on a phone;
 * `onAdvance(w)` is called when Enter is pressed in a text field whose value is good.
 */
export function createFieldLayer({ fields, views, canAct, onSignRequest, onChange, onAdvance, zoom, attachmentsUrl }) {
  const counters = {};
  const totals = {};
  for (const f of fields) totals[nounOf(f.type)] = (totals[nounOf(f.type)] ?? 0) + 1;
  const sorted = [...fields].sort((a, b) => a.page - b.page || a.positionY - b.positionY || a.positionX - b.positionX);

  const widgets = sorted.map((field) => {
    const noun = nounOf(field.type);
    counters[noun] = (counters[noun] ?? 0) + 1;
    const numbered = totals[noun] > 1 ? t('signing-widgets.numbered', { noun, n: counters[noun] }) : noun;
    const name = field.label ? t('signing-fields.captioned', { caption: field.label, name: numbered }) : numbered;
    const label = t('signing-widgets.fieldLabel', { name, page: field.page, required: field.required && !AUTO.has(field.type) && !field.readOnly ? 'yes' : 'no' });

    const box = document.createElement('div');
    box.className = `field type-${field.type.toLowerCase()}`;
    box.dataset.testid = `field-box-${field.fieldId}`;
    if (field.required && !AUTO.has(field.type) && !field.readOnly) box.classList.add('required');
    // Messages open towards the middle of the page, so they never stick out of it (a phone would zoom out).
    if (field.positionX + field.width / 2 > 50) box.classList.add('error-left');
    if (field.positionY + field.height > 90) box.classList.add('error-above');
    // Placed by the centre (see .field in signing.css: the box never gets smaller than a 24 px target).
    const width = field.positionX + field.width > 100 ? 100 - field.positionX : field.width;
    box.style.left = `${field.positionX + width / 2}%`;
    box.style.top = `${field.positionY + field.height / 2}%`;
    box.style.width = `${width}%`;
    box.style.height = `${field.height}%`;
    // Font size follows the field's height on screen (CSS reads --h against the page box's height).
    box.style.setProperty('--h', String(field.height));

    const control = buildControl(field, label);
    if (!control.dataset.testid) control.dataset.testid = `field-${field.fieldId}`;
    if (!control.hasAttribute('aria-label')) control.setAttribute('aria-label', label);
    const error = document.createElement('span');
    error.className = 'field-error';
    error.id = `field-error-${field.fieldId}`;
    error.dataset.testid = `field-error-${field.fieldId}`;
    error.hidden = true;
    error.setAttribute('role', 'alert');
    const caption = labelCaption(field);
    box.append(...(caption ? [caption] : []), control, error);

    const view = views.find((v) => v.n === field.page);
    (view ?? views[views.length - 1])?.overlay.append(box);
    return { field, box, control, error, label, attachment: field.attachment ?? null };
  });

  let signature = null;
  let lastGuided = null;
  // A read-only field is the sender's: shown, never asked for.
  const interactive = widgets.filter((w) => !AUTO.has(w.field.type) && !w.field.readOnly);
  // Which fields their conditions show now; recomputed on every change (the server decides the same on submit).
  let shown = new Set(widgets.map((w) => w.field.fieldId));
  const isShown = (w) => shown.has(w.field.fieldId);
  const updateVisibility = () => {
    shown = visibleIds(fields, (id) => {
      const w = widgets.find((x) => x.field.fieldId === id);
      return w ? valueOf(w) : null;
    });
    for (const w of widgets) {
      const hide = !isShown(w);
      if (w.box.hidden !== hide) {
        w.box.hidden = hide;
        if (hide) showError(w, null);
      }
    }
  };

  const valueOf = (w) => {
    const { type } = w.field;
    if (isSign(type)) return signature ? 'signed' : '';
    if (type === 'CHECKBOX') return w.control.checked ? 'true' : 'false';
    if (type === 'RADIO') return w.control.querySelector('input:checked')?.value ?? '';
    if (type === 'DROPDOWN') return w.control.value;
    if (type === 'FILE') return w.attachment ? w.attachment.name : '';
    if (type === 'NUMBER') return w.control.value.trim().replace(',', '.');
    if (type === 'TEXT') return w.control.value.trim();
    return w.field.value ?? '';
  };

  /** The problem with a widget's value, or null. */
  const problemOf = (w) => {
    const { type, required } = w.field;
    if (!isShown(w) || w.field.readOnly) return null;
    const value = valueOf(w);
    if (isSign(type)) return required && !signature ? (type === 'SIGNATURE' ? t('signing-widgets.signHere') : t('signing-widgets.initialsHere')) : null;
    if (type === 'CHECKBOX') return required && value !== 'true' ? t('signing-widgets.tickBox') : null;
    if (type === 'RADIO' || type === 'DROPDOWN') return required && !value ? t('signing-widgets.chooseOption') : null;
    if (type === 'FILE') return required && !value ? t('signing-attachments.required') : null;
    if (type === 'NUMBER' && value && !NUMBER.test(value)) return t('signing-widgets.numberLike');
    if (required && !value) return type === 'NUMBER' ? t('signing-widgets.enterNumber') : t('signing-widgets.fillIn');
    return ruleMessage(w.field, value);
  };

  const focusTarget = (w) => (w.field.type === 'RADIO' ? (w.control.querySelector('input:checked') ?? w.control.querySelector('input')) : w.control);

  const showError = (w, message) => {
    w.error.textContent = message ?? '';
    w.error.hidden = !message;
    w.box.classList.toggle('invalid', Boolean(message));
    if (message) {
      w.control.setAttribute('aria-invalid', 'true');
      w.control.setAttribute('aria-describedby', w.error.id);
    } else {
      w.control.removeAttribute('aria-invalid');
      w.control.removeAttribute('aria-describedby');
    }
  };

  const refresh = (w) => {
    updateVisibility();
    const value = valueOf(w);
    w.box.classList.toggle('filled', problemOf(w) === null && value !== '' && value !== 'false');
    // Once a message is showing, it goes away as soon as the value is good.
    if (!w.error.hidden) showError(w, problemOf(w));
    onChange?.();
  };

  // A tap or click already hit the field: zooming then would move it from under the finger.
  let lastPointer = 0;
  document.addEventListener('pointerdown', () => (lastPointer = Date.now()), true);

  for (const w of interactive) {
    if (!canAct) {
      disable(w);
      continue;
    }
    // A keyboard user's Tab may land on a field too small to read on a phone: zoom to it as the guide does.
    w.box.addEventListener('focusin', () => {
      if (Date.now() - lastPointer > 800 && fit(w)) reveal(w, 'auto');
    });
    if (isSign(w.field.type)) w.control.addEventListener('click', (e) => onSignRequest(w.field, w.control, { keyboard: e.detail === 0 }));
    else if (w.field.type === 'FILE') wireFileControl(w, { url: attachmentsUrl, done: () => refresh(w), showError: (m) => showError(w, m) });
    else {
      w.control.addEventListener('input', () => refresh(w));
      w.control.addEventListener('change', () => refresh(w));
    }
    if (w.field.type === 'TEXT' || w.field.type === 'NUMBER') {
      // Enter moves on, as in a form: the guided flow needs no mouse and no long Tab walk.
      w.control.addEventListener('keydown', (e) => {
        if (e.key !== 'Enter' || e.isComposing) return;
        e.preventDefault();
        const problem = problemOf(w);
        if (problem && valueOf(w) !== '') return showError(w, problem);
        onAdvance?.(w);
      });
    }
    if (w.field.type === 'NUMBER') w.control.addEventListener('blur', () => w.control.value.trim() && showError(w, problemOf(w)));
  }

  updateVisibility();

  return {
    /** Required fields still missing, and all required ones, for the progress line. */
    progress() {
      const required = interactive.filter((w) => w.field.required && isShown(w));
      return { done: required.filter((w) => problemOf(w) === null).length, total: required.length };
    },
    hasSignatureFields: interactive.some((w) => isSign(w.field.type)),
    /** Marks every problem inline; returns the widgets that have one, in document order. */
    validate() {
      const bad = [];
      for (const w of interactive) {
        const problem = problemOf(w);
        showError(w, problem);
        if (problem) bad.push(w);
      }
      return bad;
    },
    /** The `fields` of POST /complete: SIGNATURE/INITIALS by id only (the value is the signature). */
    submission() {
      const out = [];
      for (const w of interactive) {
        const { fieldId, type } = w.field;
        // A hidden field sends nothing: the server refuses a value for it (FIELD_HIDDEN).
        if (!isShown(w)) continue;
        if (isSign(type)) {
          if (signature) out.push({ fieldId });
          continue;
        }
        // A FILE field's value is its upload, which the server holds already.
        if (type === 'FILE') continue;
        const value = valueOf(w);
        if (type === 'CHECKBOX' || value !== '') out.push({ fieldId, value });
      }
      return out;
    },
    /** Shows a message the server gave for one of the submitted fields. */
    showServerError(fieldId, message) {
      const w = widgets.find((x) => x.field.fieldId === fieldId);
      if (!w) return false;
      showError(w, message);
      return true;
    },
    setSignature(sig) {
      signature = sig;
      for (const w of interactive) {
        if (!isSign(w.field.type)) continue;
        w.control.replaceChildren();
        if (sig && sig.kind === 'typed' && w.field.type === 'INITIALS') {
          // A typed signature gives typed initials; a drawn or uploaded one is used as is.
          const span = document.createElement('span');
          span.className = 'typed-initials';
          span.textContent = initialsOf(sig.text);
          w.control.append(span);
          w.control.setAttribute('aria-label', t('signing-widgets.changeLabel', { label: w.label, value: span.textContent }));
        } else if (sig) {
          const img = document.createElement('img');
          img.src = sig.image;
          img.alt = '';
          w.control.append(img);
          w.control.setAttribute('aria-label', t('signing-widgets.signedLabel', { label: w.label }));
        } else {
          w.control.textContent = w.field.type === 'SIGNATURE' ? t('signing-widgets.sign') : t('signing-widgets.initial');
          w.control.setAttribute('aria-label', t('signing-widgets.actionLabel', { action: w.control.textContent, label: w.label }));
        }
        refresh(w);
      }
    },
    get signature() {
      return signature;
    },
    /**
     * Moves focus to the next field that still needs something (after `from`, or the focused one, or the
     * last one the guide went to; wrapping) and returns it; null when none does.
     */
    focusNext(from) {
      const missing = interactive.filter((w) => problemOf(w) !== null);
      if (!missing.length) return null;
      const anchor = from ?? interactive.find((w) => w.box.contains(document.activeElement)) ?? lastGuided;
      const current = anchor ? interactive.indexOf(anchor) : -1;
      const next = missing.find((w) => interactive.indexOf(w) > current) ?? missing[0];
      focusWidget(next);
      return next;
    },
    isSign(w) {
      return isSign(w.field.type);
    },
    focusWidget(w) {
      focusWidget(w);
    },
    /** After the outcome: nothing can be changed any more. */
    lock() {
      interactive.forEach(disable);
    },
  };

  function disable(w) {
    if ('disabled' in w.control) w.control.disabled = true;
    else w.control.setAttribute('aria-disabled', 'true');
    w.control.querySelectorAll('input').forEach((i) => (i.disabled = true));
  }

  /** Zooms in on a phone until the field is a comfortable touch target; true when the zoom changed. */
  function fit(w) {
    return zoom?.fit(w.box.closest('.page'), w.field.height) ?? false;
  }

  function focusWidget(w) {
    lastGuided = w;
    const zoomed = fit(w);
    // Right after a zoom the layout jumped: go there at once, not by a smooth scroll from a stale place.
    const smooth = !zoomed && !window.matchMedia('(prefers-reduced-motion: reduce)').matches;
    reveal(w, smooth ? 'smooth' : 'auto');
    focusTarget(w).focus({ preventScroll: true });
  }

  /** Scrolls the field to the middle of the screen; one wider than the screen shows its start, where typing begins. */
  function reveal(w, behavior) {
    const visibleWidth = w.box.closest('.document')?.clientWidth ?? window.innerWidth;
    const wide = w.box.getBoundingClientRect().width > visibleWidth - 16;
    w.box.scrollIntoView({ block: 'center', inline: wide ? 'start' : 'center', behavior });
  }
}

function isSign(type) {
  return SIGN.has(type);
}
