import { t } from '../../i18n/catalogue.js';
import { DEFAULT_LOCALE, type Locale } from '../../i18n/locales.js';
import { escapeHtml } from '../html.js';
import { languageSwitch, loadPublicPageAssets, messagesBlock, publicPageHead, withHtml } from '../public-page.js';
import type { PageAssets } from '../static-assets.js';

/**
 * The public document verification page (GET /verify-document): a PDF is chosen or dropped, and one
 * small client script posts it to POST /v1/documents/verify and shows the answer. URLs are relative
 * to /verify-document, so the page works behind a path prefix. Every word is the catalogue's
 * (namespace `verify-document`), in the visitor's language; the script's messages are embedded.
 */

/** The page's client script and stylesheet, with public.css and the message modules; read once at start. */
export const loadVerifyDocumentAssets = (): PageAssets => loadPublicPageAssets(new URL('./assets/', import.meta.url));

export type VerifyDocumentPageOptions = {
  /** `app-<hash>`, the versioned asset folder under /verify-document/assets/. */
  assetPrefix: string;
  /** MAX_PDF_BYTES: a larger file is refused before it is sent. */
  maxBytes: number;
  /** The page's language (`?lang=`, else Accept-Language, else English). */
  locale?: Locale;
};

export function renderVerifyDocumentPage(o: VerifyDocumentPageOptions): string {
  const locale = o.locale ?? DEFAULT_LOCALE;
  const say = (key: string, values?: Record<string, string | number>) => escapeHtml(t(locale, `verify-document.${key}`, values));
  const mb = Math.floor(o.maxBytes / (1024 * 1024));
  const head = publicPageHead({ title: t(locale, 'verify-document.title'), assets: `verify-document/assets/${o.assetPrefix}`, stylesheet: 'verify-document.css', script: 'verify-document.js', locale });
  const fileLine = withHtml(locale, 'verify-document.fileLine', {}, { name: '<span id="vd-filename" class="filename"></span>', sha: '<code id="vd-sha" class="sha" dir="ltr" data-testid="vd-sha"></code>' });
  return `${head}
<body>
${messagesBlock(locale, 'verify-document.')}
<main id="vd-app" class="card" data-state="choose" data-verify-url="v1/documents/verify" data-max-bytes="${o.maxBytes}" data-testid="vd-app">
<p class="brand">Signet</p>
<h1>${say('title')}</h1>
<p class="lead">${say('lead')}</p>
<label class="drop" for="vd-file" id="vd-drop" data-testid="vd-drop">
<span class="drop-title">${say('dropTitle')}</span>
<span class="drop-or">${say('dropOr')}</span>
<span class="button primary" aria-hidden="true">${say('choose')}</span>
<span class="drop-hint">${say('dropHint', { mb })}</span>
<input id="vd-file" class="file" type="file" accept="application/pdf,.pdf" aria-describedby="vd-status" data-testid="vd-file">
</label>
<p id="vd-status" class="status" role="status" aria-live="polite" data-testid="vd-status"></p>
<p id="vd-error" class="error" role="alert" data-testid="vd-error" hidden></p>
<section id="vd-result" class="result" aria-labelledby="vd-verdict" data-testid="vd-result" hidden>
<h2 id="vd-verdict" class="verdict" tabindex="-1" data-testid="vd-verdict"></h2>
<p id="vd-summary" class="summary" data-testid="vd-summary"></p>
<dl id="vd-details" class="details"></dl>
<div id="vd-signers-block" hidden>
<h3 class="signers-title">${say('signers')}</h3>
<ul id="vd-signers" class="signers" data-testid="vd-signers"></ul>
</div>
<p class="file-line">${fileLine}</p>
<button type="button" class="button secondary" id="vd-again" data-testid="vd-again">${say('again')}</button>
</section>
<noscript><p class="error">${say('noscript')}</p></noscript>
${languageSwitch(locale, t(locale, 'verify-document.languages'))}
</main>
</body>
</html>
`;
}
