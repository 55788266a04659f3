import { fileURLToPath } from 'node:url';
import { pageHead } from './html.js';
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

/** A public page's files: those in `dir` (the page's assets folder) and public.css. */
export function loadPublicPageAssets(dir: URL): PageAssets {
  return loadPageAssets(fileURLToPath(dir), new Map([['public.css', PUBLIC_CSS]]));
}

export type PublicHead = {
  title: string;
  /** The page's versioned asset folder, relative to the page (`assets/app-<hash>`). */
  assets: string;
  /** The page's own stylesheet and client module in that folder. */
  stylesheet: string;
  script?: string;
  noindex?: boolean;
};

/** The document up to the end of <head>, public.css before the page's stylesheet. */
export function publicPageHead(o: PublicHead): string {
  return pageHead({
    title: o.title,
    stylesheets: [`${o.assets}/public.css`, `${o.assets}/${o.stylesheet}`],
    script: o.script && `${o.assets}/${o.script}`,
    noindex: o.noindex,
  });
}
