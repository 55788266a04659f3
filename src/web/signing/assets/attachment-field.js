// A FILE field (issue 37): a button that opens the file picker, uploads the chosen PDF, PNG or JPEG
// to POST <attachmentsUrl>/<fieldId> (checked in the server's sandbox), and shows its name and size.
// Refusals are shown in the field's message, announced (role=alert), in the page's language.
import { locale, t } from './i18n.js';

const ACCEPT = 'application/pdf,image/png,image/jpeg,.pdf,.png,.jpg,.jpeg';
const CODE_MESSAGES = {
  ATTACHMENT_TYPE_UNSUPPORTED: 'errorType',
  ATTACHMENT_TYPE_MISMATCH: 'errorType',
  ATTACHMENT_TOO_LARGE: 'errorTooLarge',
  PAYLOAD_TOO_LARGE: 'errorTooLarge',
  PDF_TOO_LARGE: 'errorTooLarge',
  ATTACHMENT_BOMB: 'errorBomb',
  ATTACHMENT_INVALID: 'errorInvalid',
};

/** Bytes as the reader's locale writes sizes: "182 KB", "1.4 MB". */
export function formatSize(bytes) {
  const units = [['megabyte', 1024 * 1024], ['kilobyte', 1024]];
  for (const [unit, size] of units) {
    if (bytes >= size) return new Intl.NumberFormat(locale, { style: 'unit', unit, unitDisplay: 'short', maximumFractionDigits: 1 }).format(bytes / size);
  }
  return new Intl.NumberFormat(locale, { style: 'unit', unit: 'byte', unitDisplay: 'short' }).format(bytes);
}

/** The field's button; the picker itself is an input kept out of sight and out of the tab order. */
export function buildFileControl(field) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'control attach';
  const input = document.createElement('input');
  input.type = 'file';
  input.accept = ACCEPT;
  input.hidden = true;
  input.tabIndex = -1;
  input.dataset.testid = `field-file-${field.fieldId}`;
  button.fileInput = input;
  return button;
}

/** Shows the attachment on the button (or the invitation to attach one) with a name speech users can say. */
export function showAttachment(w) {
  const a = w.attachment;
  w.control.textContent = a ? t('signing-attachments.attached', { name: a.name, size: formatSize(a.size) }) : t('signing-attachments.choose');
  w.control.title = a ? w.control.textContent : t('signing-attachments.hint', { max: formatSize(w.maxBytes ?? 10 * 1024 * 1024) });
  w.control.setAttribute('aria-label', `${w.control.textContent}: ${w.label}`);
}

/** Wires the picker: the button opens it, a chosen file is uploaded, the outcome shown; `done` refreshes the field. */
export function wireFileControl(w, { url, done, showError }) {
  const input = w.control.fileInput;
  w.box.append(input);
  w.error.setAttribute('role', 'alert');
  showAttachment(w);
  w.control.addEventListener('click', () => input.click());
  input.addEventListener('change', async () => {
    const file = input.files?.[0];
    input.value = '';
    if (!file) return;
    showError(null);
    w.control.textContent = t('signing-attachments.uploading', { name: file.name });
    w.control.setAttribute('aria-busy', 'true');
    try {
      const body = new FormData();
      body.append('file', file, file.name);
      const response = await fetch(`${url}/${w.field.fieldId}`, { method: 'POST', body, credentials: 'same-origin', cache: 'no-store' });
      const answer = await response.json().catch(() => ({}));
      if (!response.ok) throw Object.assign(new Error(answer.error ?? 'upload failed'), { code: answer.code, maxBytes: answer.maxBytes });
      w.attachment = answer;
      showAttachment(w);
      w.control.removeAttribute('aria-busy');
      done();
    } catch (err) {
      showAttachment(w);
      w.control.removeAttribute('aria-busy');
      // After the refresh, which would replace the refusal with the field's own problem.
      done();
      const key = CODE_MESSAGES[err.code] ?? 'errorGeneric';
      showError(t(`signing-attachments.${key}`, { max: formatSize(err.maxBytes ?? 10 * 1024 * 1024) }));
    }
  });
}
