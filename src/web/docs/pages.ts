import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapeHtml, pageHead } from '../html.js';
import { loadPublicPageAssets, PUBLIC_PAGE_CSP } from '../public-page.js';
import { loadPageAssets, type PageAssets } from '../static-assets.js';
import type { Guide } from './guides.js';

/**
 * GET /, /docs (the API reference) and /docs/guides/… : server-rendered, no inline script or style.
 * URLs in the pages are relative, so they work behind a path prefix.
 */

/** The reference's policy: the public pages' one, plus what Swagger UI needs: its SVG icons as data: images, and "try it" calls to this origin only. */
export const DOCS_PAGE_HELMET = {
  contentSecurityPolicy: { useDefaults: false, directives: { ...PUBLIC_PAGE_CSP, 'form-action': ["'self'"] } },
  referrerPolicy: { policy: 'no-referrer' as const },
  frameguard: { action: 'deny' as const },
};

/** The public pages' look (public.css) and the docs' own stylesheet: for GET / and the guides. */
export const loadDocsAssets = (): PageAssets => loadPublicPageAssets(new URL('./assets/', import.meta.url));

/** Swagger UI's bundle and stylesheet, from node_modules, beside our initializer: one fingerprint over all three. */
export function loadReferenceAssets(): PageAssets {
  const dist = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const ours = fileURLToPath(new URL('./reference/', import.meta.url));
  return loadPageAssets(ours, new Map([['swagger-ui.css', path.join(dist, 'swagger-ui.css')], ['swagger-ui-bundle.js', path.join(dist, 'swagger-ui-bundle.js')]]));
}

export type Link = { href: string; label: string; about: string };

/** What GET / links, relative to / (the JSON form makes them absolute). */
export const HOME_LINKS: Link[] = [
  { href: 'dashboard', label: 'Dashboard', about: 'Sign in, get an API key, see your envelopes.' },
  { href: 'docs', label: 'API reference', about: 'Every route, generated from /openapi.json, with "try it" against this server.' },
  { href: 'docs/guides', label: 'Guides', about: 'Getting started, envelopes and fields, templates, webhooks, operating Signet.' },
  { href: 'verify-document', label: 'Verify a document', about: 'Check whether a PDF was sealed by this server and is unchanged.' },
  { href: 'health', label: 'Health', about: 'Whether this node, its database and its storage answer (JSON).' },
];

function publicHead(title: string, base: string, prefix: string): string {
  return pageHead({ title, stylesheets: [`${base}docs/assets/${prefix}/public.css`, `${base}docs/assets/${prefix}/docs.css`] });
}

const linkList = (links: Link[], base: string) =>
  `<ul class="links">${links.map((l) => `<li><a href="${escapeHtml(base + l.href)}">${escapeHtml(l.label)}</a><span>${escapeHtml(l.about)}</span></li>`).join('')}</ul>`;

export function renderHomePage(o: { prefix: string; version: string }): string {
  return `${publicHead('Signet', '', o.prefix)}
<body>
<main class="card home">
<p class="brand">Signet ${escapeHtml(o.version)}</p>
<h1>Signet, a self-hostable e-signature API</h1>
<p class="lead">Upload a PDF, name who signs, and Signet sends the links, tracks each signer and seals the signed PDF.</p>
${linkList(HOME_LINKS, '')}
</main>
</body>
</html>
`;
}

const guidesNav = (guides: Guide[], base: string, current?: string) =>
  `<nav class="guides-nav" aria-label="Guides"><ul>${guides
    .map((g) => `<li><a href="${escapeHtml(base + g.name)}"${g.name === current ? ' aria-current="page"' : ''}>${escapeHtml(g.title)}</a></li>`)
    .join('')}</ul></nav>`;

export function renderGuidesIndex(o: { prefix: string; guides: Guide[] }): string {
  const body = o.guides.length ? guidesNav(o.guides, 'guides/') : '<p>No guides are installed with this server.</p>';
  return `${publicHead('Guides · Signet', '../', o.prefix)}
<body>
<main class="card guide">
<p class="brand"><a href="../">Signet</a> · <a href="../docs">API reference</a></p>
<h1>Guides</h1>
${body}
</main>
</body>
</html>
`;
}

export function renderGuidePage(o: { prefix: string; guide: Guide; guides: Guide[] }): string {
  return `${publicHead(`${o.guide.title} · Signet`, '../../', o.prefix)}
<body class="with-nav">
${guidesNav(o.guides, '', o.guide.name)}
<main class="card guide">
<p class="brand"><a href="../../">Signet</a> · <a href="../guides">Guides</a> · <a href="../../docs">API reference</a></p>
<article class="markdown">
${o.guide.html}
</article>
</main>
</body>
</html>
`;
}

export function renderReferencePage(o: { prefix: string }): string {
  const a = `docs/reference/${o.prefix}`;
  return `${pageHead({ title: 'API reference · Signet', stylesheets: [`${a}/swagger-ui.css`, `${a}/reference.css`], script: `${a}/reference.js` })}
<body>
<header class="ref-header">
<p class="ref-brand"><a href="./">Signet</a></p>
<nav aria-label="Documentation"><a href="docs/guides">Guides</a> <a href="openapi.json">openapi.json</a> <a href="dashboard">Dashboard</a></nav>
</header>
<main>
<h1 class="ref-title">API reference</h1>
<p class="ref-hint">Use <strong>Authorize</strong> with a test key (<code>svc_test_…</code>, from the dashboard) to try calls against this server: test envelopes are free and send no email.</p>
<div id="swagger-ui" data-spec-url="openapi.json"></div>
<script src="${escapeHtml(a)}/swagger-ui-bundle.js"></script>
</main>
</body>
</html>
`;
}
