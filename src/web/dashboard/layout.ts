/**
 * The dashboard's HTML shell: Pico CSS (served by us), a top bar with the account and sign-out, the
 * section nav, and the page's own body. Pages are server-rendered; dashboard.js adds the copy buttons,
 * confirmations and the products call, and every page works without it except those.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapeHtml, pageHead } from '../html.js';
import { loadPageAssets, type PageAssets } from '../static-assets.js';

export { escapeHtml };

/** Pico CSS from our own node_modules (never a CDN), then our few additions and the client script; read once at start. */
export function loadDashboardAssets(): PageAssets {
  const require = createRequire(import.meta.url);
  const pico = path.join(path.dirname(require.resolve('@picocss/pico/package.json')), 'css', 'pico.min.css');
  return loadPageAssets(fileURLToPath(new URL('./assets/', import.meta.url)), new Map([['pico.min.css', pico]]));
}

/** Strict CSP: our own scripts and styles only, no inline script, no framing. */
export const DASHBOARD_CSP = {
  'default-src': ["'none'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'font-src': ["'self'"],
  'base-uri': ["'none'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
  'object-src': ["'none'"],
} as const;

export const NAV = [
  { id: 'overview', href: '/dashboard', label: 'Overview' },
  { id: 'keys', href: '/dashboard/keys', label: 'API keys' },
  { id: 'billing', href: '/dashboard/billing', label: 'Billing' },
  { id: 'envelopes', href: '/dashboard/envelopes', label: 'Envelopes' },
  { id: 'templates', href: '/dashboard/templates', label: 'Templates' },
  { id: 'webhooks', href: '/dashboard/webhooks', label: 'Webhooks' },
  { id: 'products', href: '/dashboard/products', label: 'Products' },
  { id: 'settings', href: '/dashboard/settings', label: 'Settings' },
] as const;

export type NavId = (typeof NAV)[number]['id'];

export type PageShell = {
  title: string;
  /** `app-<hash>` from loadDashboardAssets. */
  assets: string;
  /** The form token for this browser (sign-out and the page's own forms). */
  csrf: string;
  /** Signed-in pages: the account shown in the top bar and the highlighted nav entry. */
  account?: { email: string; active: NavId };
  /** The operator's standing notice on every signed-in page (an untrusted sealing certificate): text only. */
  notice?: string;
  /** A one-line notice above the page (after a redirect): text only. */
  flash?: { kind: 'ok' | 'error'; text: string };
  /** The page's HTML; every value in it was escaped by the page. */
  body: string;
};

export function renderPage(p: PageShell): string {
  const a = `/dashboard/assets/${p.assets}`;
  const nav = p.account
    ? `<nav class="sections" aria-label="Dashboard sections"><ul>${NAV.map(
        (n) => `<li><a href="${n.href}"${n.id === p.account!.active ? ' aria-current="page"' : ''}>${n.label}</a></li>`,
      ).join('')}</ul></nav>`
    : '';
  const account = p.account
    ? `<ul><li class="account-email" title="${escapeHtml(p.account.email)}">${escapeHtml(p.account.email)}</li><li><form method="post" action="/dashboard/sign-out" class="inline">${csrfField(p.csrf)}<button type="submit" class="secondary outline">Sign out</button></form></li></ul>`
    : '';
  const notice = p.account && p.notice ? `<p class="notice" role="note"><strong>Note:</strong> ${escapeHtml(p.notice)}</p>` : '';
  const flash = p.flash ? `<p class="flash ${p.flash.kind}" role="${p.flash.kind === 'error' ? 'alert' : 'status'}">${escapeHtml(p.flash.text)}</p>` : '';
  const head = pageHead({
    title: `${p.title} · Signet`,
    stylesheets: [`${a}/pico.min.css`, `${a}/dashboard.css`],
    script: `${a}/dashboard.js`,
    noindex: true,
    meta: { 'csrf-token': p.csrf },
  });
  return `${head}
<body>
<header class="container topbar">
<nav aria-label="Account"><ul><li><a href="/dashboard" class="brand"><strong>Signet</strong></a></li></ul>${account}</nav>
${nav}
</header>
<main class="container">
${notice}${flash}
${p.body}
</main>
<footer class="container"><small><a href="/docs">API reference</a> · <a href="/llms.txt">llms.txt</a></small></footer>
</body>
</html>`;
}

export const csrfField = (token: string): string => `<input type="hidden" name="_csrf" value="${escapeHtml(token)}">`;

/**
 * A table that scrolls inside its own box on a narrow screen, so the page never gets wider than the
 * viewport. The box takes keyboard focus so it can be scrolled without a mouse (WCAG 2.1.1). On a phone
 * the rows stack (dashboard.css): each cell shows its column's name from `data-label`, so a row's last
 * column (a status, a Revoke button, a response code) is on screen without sideways scrolling.
 */
export const scrollTable = (head: string[], rows: string[][], caption?: string): string =>
  `<div class="overflow-auto" tabindex="0"${caption ? ` role="region" aria-label="${escapeHtml(caption)}"` : ''}><table class="stack">${caption ? `<caption>${escapeHtml(caption)}</caption>` : ''}<thead><tr>${head.map((h) => `<th scope="col">${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.map((c, i) => `<td data-label="${escapeHtml(head[i] ?? '')}">${c}</td>`).join('')}</tr>`)
    .join('')}</tbody></table></div>`;

/** Dates as people read them, in UTC (the API's timezone), with the exact instant in a <time> element. */
export const when = (d: Date | string | null): string => {
  if (d === null) return '—';
  const date = typeof d === 'string' ? new Date(d) : d;
  const iso = date.toISOString();
  return `<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC</time>`;
};
