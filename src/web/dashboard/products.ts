/**
 * GET /dashboard/products: the product this server offers and whether the account enabled it. The
 * Enable button is dashboard.js calling SPEC.md's POST /v1/account/products/{product}/enable with the
 * session cookie and the page's CSRF token; the status line beside it reports a failure.
 */
import { escapeHtml, when } from './layout.js';
import { badge, pageHeader } from './parts.js';

export function productsPage(v: { productId: string; enabledAt: string | null }): string {
  const statusId = `product-status-${v.productId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const state = v.enabledAt
    ? `<p>${badge('enabled', 'good')} since ${when(v.enabledAt)}</p>`
    : `<p>${badge('not enabled', 'muted')}</p>
<button type="button" data-enable-product="${escapeHtml(v.productId)}" aria-describedby="${statusId}">Enable ${escapeHtml(v.productId)}</button>`;
  return `${pageHeader({ title: 'Products', lead: 'What this server offers, and whether your account has it enabled.' })}
<article class="product" aria-labelledby="product-title">
<header><h2 id="product-title"><code>${escapeHtml(v.productId)}</code></h2></header>
<p>E-signatures: envelopes, templates, identity verifications and webhooks through the API and MCP. Enabling is free and can be repeated safely.</p>
${state}
<p id="${statusId}" role="status" aria-live="polite" class="product-status"></p>
</article>`;
}
