import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { messagesFor, messagesJson, t } from '../i18n/catalogue.js';
import { DEFAULT_LOCALE, isLocale, LOCALES, negotiateLocale, textDirection, type Locale } from '../i18n/locales.js';
import { escapeHtml, pageHead } from './html.js';
import { loadPageAssets, type PageAssets } from './static-assets.js';

/**
 * What the small public pages share (the identity verification page, GET /verify/<token>, and the
 * document verification page, GET /verify-document): their policy, the head of their HTML and
 * assets/public.css, served from each page's own asset folder before the page's stylesheet.
 */

/** No inline script or style, everything from our origin, no framing, no forms posted by the browser itself. */
export const PUBLIC_PAGE_CSP = {
  'default-src': ["'none'"],
  'script-src': ["'self'"],
  'connect-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'style-src': ["'self'"],
  'base-uri': ["'none'"],
  'form-action': ["'none'"],
  'frame-ancestors': ["'none'"],
  'object-src': ["'none'"],
} as const;

/** The route option for helmet: the policy above, no Referer (a token in the URL is a credential, and nothing leaks to a redirect target), no framing. */
export const PUBLIC_PAGE_HELMET = {
  contentSecurityPolicy: { useDefaults: false, directives: PUBLIC_PAGE_CSP },
  referrerPolicy: { policy: 'no-referrer' as const },
  frameguard: { action: 'deny' as const },
};

/** Beside this module under tsx and in dist/ once the build copies it, like the pages' own files. */
const PUBLIC_CSS = fileURLToPath(new URL('./assets/public.css', import.meta.url));

/**
 * The signing page's message module and intl-messageformat's browser build, shared rather than copied:
 * the public pages format their catalogue's messages in the browser exactly as the signing page does.
 */
const I18N_JS = fileURLToPath(new URL('./signing/assets/i18n.js', import.meta.url));
const MESSAGE_FORMAT_JS = path.join(path.dirname(createRequire(import.meta.url).resolve('intl-messageformat')), 'intl-messageformat.iife.js');

/** A public page's files: those in `dir` (the page's assets folder), public.css, and the message modules. */
export function loadPublicPageAssets(dir: URL): PageAssets {
  return loadPageAssets(
    fileURLToPath(dir),
    new Map([
      ['public.css', PUBLIC_CSS],
      ['i18n.js', I18N_JS],
      ['intl-messageformat.js', MESSAGE_FORMAT_JS],
    ]),
  );
}

/** A public page's language: `?lang=` when it names one of ours, else the browser's Accept-Language, else English. */
export function pageLocale(query: unknown, acceptLanguage: string | undefined): Locale {
  const asked = (query as { lang?: unknown } | undefined)?.lang;
  if (isLocale(asked)) return asked;
  return negotiateLocale(acceptLanguage) ?? DEFAULT_LOCALE;
}

/** The page's messages (namespace `prefix`), for its script: a JSON block that cannot end its element. */
export const messagesBlock = (locale: Locale, prefix: string): string =>
  `<script type="application/json" id="signet-messages">${messagesJson(messagesFor(locale, [prefix]))}</script>`;

/** Links to the page in each of our languages, each named in its own (Intl's names, no catalogue needed). */
export function languageSwitch(current: Locale, label: string): string {
  const links = LOCALES.map((l) => {
    const name = new Intl.DisplayNames([l], { type: 'language' }).of(l) ?? l;
    return l === current
      ? `<li><span aria-current="true" lang="${l}">${escapeHtml(name)}</span></li>`
      : `<li><a href="?lang=${encodeURIComponent(l)}" lang="${l}" hreflang="${l}" data-testid="lang-${l}">${escapeHtml(name)}</a></li>`;
  });
  return `<nav class="languages" aria-label="${escapeHtml(label)}"><ul>${links.join('')}</ul></nav>`;
}

export type PublicHead = {
  title: string;
  /** The page's versioned asset folder, relative to the page (`assets/app-<hash>`). */
  assets: string;
  /** The page's own stylesheet and client module in that folder. */
  stylesheet: string;
  script?: string;
  noindex?: boolean;
  /** The page's language: `lang`, and `dir="rtl"` for Arabic. English when unset. */
  locale?: Locale;
};

/** The document up to the end of <head>, public.css before the page's stylesheet. */
export function publicPageHead(o: PublicHead): string {
  return pageHead({
    title: o.title,
    stylesheets: [`${o.assets}/public.css`, `${o.assets}/${o.stylesheet}`],
    script: o.script && `${o.assets}/${o.script}`,
    noindex: o.noindex,
    lang: o.locale ?? DEFAULT_LOCALE,
    dir: textDirection(o.locale ?? DEFAULT_LOCALE),
  });
}

/** A message with markup in it: the message escaped, then each piece of markup put where its argument was. */
export function withHtml(locale: Locale, key: string, values: Record<string, string | number>, html: Record<string, string>): string {
  const marks = Object.fromEntries(Object.keys(html).map((k, i) => [k, `\u0000${i}\u0000`]));
  let out = escapeHtml(t(locale, key, { ...values, ...marks }));
  Object.values(html).forEach((markup, i) => (out = out.split(`\u0000${i}\u0000`).join(markup)));
  return out;
}
