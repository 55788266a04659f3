/**
 * The field editor: a static shell around one draft. The draft's recipients and fields travel in a JSON
 * data block (not executed, so the CSP's script-src does not apply to it); editor.js renders the pages
 * with pdf.js and saves every change through the field API as it happens.
 */
import { escapeHtml, pageHead } from '../html.js';
import { SIGNING_PAGE_CSP } from '../signing/page.js';

/** The editor draws pages with pdf.js as the signing page does, so it needs the same policy, and no more. */
export const EDITOR_PAGE_CSP = SIGNING_PAGE_CSP;

/** What the editor works on: a draft's recipients, or a template's recipient slots (assigned by their placeholder email). */
export type EditorState = {
  title: string | null;
  recipients: { email: string; name: string; role: string }[];
  fields: { fieldId: number; type: string; recipientEmail: string; page: number; positionXPercent: number; positionYPercent: number; widthPercent: number; heightPercent: number }[];
};

export type EditorPageOptions = {
  state: EditorState;
  /** Versioned asset folders: the editor's own, the signing page's (pdf-view.js) and pdf.js's. */
  editorAssets: string;
  signingAssets: string;
  pdfjsAssets: string;
  /**
   * The adapter: where the document and the field routes live, and how the page ends. A draft has `send`
   * (the Send button, then `done`); a template has none, and `done` is a plain "Done" link back.
   */
  urls: { document: string; fields: string; send?: string; done: string; back: string };
  /** What is being prepared: names the page's words (recipient or recipient slot, back link). */
  kind?: 'envelope' | 'template';
  /** The dashboard's CSRF token (X-CSRF-Token on every save); absent for a prepare link, whose token is in its URLs. */
  csrf?: string;
  /** A prepare link's token: sent as X-Prepare-Token on every save instead of a session. */
  prepareToken?: string;
};

const PALETTE: [string, string][] = [
  ['SIGNATURE', 'Signature'],
  ['INITIALS', 'Initials'],
  ['DATE', 'Date'],
  ['TEXT', 'Text'],
  ['NAME', 'Name'],
  ['EMAIL', 'Email'],
  ['NUMBER', 'Number'],
  ['CHECKBOX', 'Checkbox'],
];

// `<` escaped so the JSON can never close its script element.
const jsonBlock = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

export function renderEditorPage(o: EditorPageOptions): string {
  const template = o.kind === 'template';
  const title = o.state.title ?? (template ? 'Untitled template' : 'Untitled envelope');
  const who = template ? 'Recipient slot' : 'Recipient';
  const head = pageHead({
    title: `Prepare ${title} · Signet`,
    stylesheets: [`${o.editorAssets}/editor.css`],
    modulepreload: [`${o.pdfjsAssets}/pdf.min.mjs`],
    script: `${o.editorAssets}/editor.js`,
    noindex: true,
    meta: o.csrf ? { 'csrf-token': o.csrf } : {},
  });
  const recipients = o.state.recipients.map((r, i) => `<option value="${i}">${template ? `${i + 1}: ` : ''}${escapeHtml(r.name)} (${escapeHtml(r.email)})</option>`).join('');
  const legend = o.state.recipients.map((r, i) => `<li><span class="swatch r${i % 8}" aria-hidden="true"></span>${template ? `Slot ${i + 1}: ` : ''}${escapeHtml(r.name)}</li>`).join('');
  const palette = PALETTE.map(([type, label]) => `<li><button type="button" class="tool" data-type="${type}">${label}</button></li>`).join('');
  const u = o.urls;
  return `${head}
<body>
<script type="application/json" id="editor-state">${jsonBlock(o.state)}</script>
<div id="editor" class="editor" data-pdfjs-base="${escapeHtml(o.pdfjsAssets)}/" data-signing-base="${escapeHtml(o.signingAssets)}/" data-document-url="${escapeHtml(u.document)}" data-fields-url="${escapeHtml(u.fields)}" ${u.send ? `data-send-url="${escapeHtml(u.send)}" ` : ''}data-done-url="${escapeHtml(u.done)}"${o.prepareToken ? ` data-prepare-token="${escapeHtml(o.prepareToken)}"` : ''}>
<header class="bar">
  ${u.back ? `<p class="crumb"><a href="${escapeHtml(u.back)}">${template ? 'Back to templates' : 'Back to the envelope'}</a></p>` : ''}
  <h1>Prepare: ${escapeHtml(title)}</h1>
  ${u.send ? '<button type="button" id="send" class="primary">Send</button>' : `<a id="done" class="button primary" href="${escapeHtml(u.done)}">Done</a>`}
</header>
<div class="layout">
<aside class="panel" aria-label="Field tools">
  <h2>Add a field</h2>
  <p class="help" id="tools-help">Drag a field onto a page, or press it to add it to the page in view. On a field: arrow keys move it by 1 point (Shift: 10), R switches to resizing, Delete removes it.</p>
  <label for="recipient">${who}</label>
  <select id="recipient">${recipients}</select>
  <label class="check"><input type="checkbox" id="required" checked> Required</label>
  <ul class="palette" aria-describedby="tools-help">${palette}</ul>
  <h2>${who}s</h2>
  <ul class="legend">${legend}</ul>
  <h2>Selected field</h2>
  <p id="selection" class="help">None: select a field on a page.</p>
  <fieldset id="placement" class="placement" disabled>
    <legend>Position and size, in points from the top-left corner</legend>
    <label for="pos-x">X</label><input id="pos-x" data-key="x" type="number" step="1" inputmode="decimal">
    <label for="pos-y">Y</label><input id="pos-y" data-key="y" type="number" step="1" inputmode="decimal">
    <label for="pos-w">Width</label><input id="pos-w" data-key="width" type="number" step="1" min="8" inputmode="decimal">
    <label for="pos-h">Height</label><input id="pos-h" data-key="height" type="number" step="1" min="8" inputmode="decimal">
  </fieldset>
  <p id="status" class="status" role="status" aria-live="polite"></p>
</aside>
<main id="pages" class="pages" aria-label="Document pages"><p class="help">Loading the document…</p></main>
</div>
</div>
</body>
</html>`;
}
