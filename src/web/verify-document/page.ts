import { loadPublicPageAssets, publicPageHead } from '../public-page.js';
import type { PageAssets } from '../static-assets.js';

/**
 * The public document verification page (GET /verify-document): a PDF is chosen or dropped, and one
 * small client script posts it to POST /v1/documents/verify and shows the answer. URLs are relative
 * to /verify-document, so the page works behind a path prefix.
 */

/** The page's client script and stylesheet, with public.css; read once at start. */
export const loadVerifyDocumentAssets = (): PageAssets => loadPublicPageAssets(new URL('./assets/', import.meta.url));

export type VerifyDocumentPageOptions = {
  /** `app-<hash>`, the versioned asset folder under /verify-document/assets/. */
  assetPrefix: string;
  /** MAX_PDF_BYTES: a larger file is refused before it is sent. */
  maxBytes: number;
};

export function renderVerifyDocumentPage(o: VerifyDocumentPageOptions): string {
  const mb = Math.floor(o.maxBytes / (1024 * 1024));
  const head = publicPageHead({ title: 'Verify a signed document', assets: `verify-document/assets/${o.assetPrefix}`, stylesheet: 'verify-document.css', script: 'verify-document.js' });
  return `${head}
<body>
<main id="vd-app" class="card" data-state="choose" data-verify-url="v1/documents/verify" data-max-bytes="${o.maxBytes}" data-testid="vd-app">
<p class="brand">Signet</p>
<h1>Verify a signed document</h1>
<p class="lead">Check whether a PDF was sealed by this server, for which envelope, and whether it has changed since. The file is checked and then discarded: nothing of it is kept.</p>
<label class="drop" for="vd-file" id="vd-drop" data-testid="vd-drop">
<span class="drop-title">Drop the PDF here</span>
<span class="drop-or">or</span>
<span class="button primary" aria-hidden="true">Choose a PDF</span>
<span class="drop-hint">PDF, up to ${mb} MB</span>
<input id="vd-file" class="file" type="file" accept="application/pdf,.pdf" aria-describedby="vd-status" data-testid="vd-file">
</label>
<p id="vd-status" class="status" role="status" aria-live="polite" data-testid="vd-status"></p>
<p id="vd-error" class="error" role="alert" data-testid="vd-error" hidden></p>
<section id="vd-result" class="result" aria-labelledby="vd-verdict" data-testid="vd-result" hidden>
<h2 id="vd-verdict" class="verdict" tabindex="-1" data-testid="vd-verdict"></h2>
<p id="vd-summary" class="summary" data-testid="vd-summary"></p>
<dl id="vd-details" class="details"></dl>
<div id="vd-signers-block" hidden>
<h3 class="signers-title">Signers</h3>
<ul id="vd-signers" class="signers" data-testid="vd-signers"></ul>
</div>
<p class="file-line">File <span id="vd-filename" class="filename"></span>, SHA-256 <code id="vd-sha" class="sha" data-testid="vd-sha"></code></p>
<button type="button" class="button secondary" id="vd-again" data-testid="vd-again">Check another file</button>
</section>
<noscript><p class="error">This page needs JavaScript to send the file for checking. API callers can use POST /v1/documents/verify.</p></noscript>
</main>
</body>
</html>
`;
}
