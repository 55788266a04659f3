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
<button type="button" data-enable-product="${escapeHtml(v.productId)}" aria-describedby="${statusId}">Enable electronic signatures</button>`;
  return `${pageHeader({ title: 'Products', lead: 'What this server offers, and whether your account has it enabled.' })}
<article class="product" aria-labelledby="product-title">
<header><h2 id="product-title">Electronic signatures</h2><p><small class="muted">Product id <code>${escapeHtml(v.productId)}</code>, as <code>POST /v1/account/products/{product}/enable</code> names it</small></p></header>
<p>Send PDFs for signature from your own software, and get them back sealed.</p>
<ul class="product-features">
<li><strong>Envelopes</strong>: upload a PDF, name the recipients and where each signs; they get a link by email, sign in the browser, and you download the completed PDF with a digital seal and an audit certificate.</li>
<li><strong>Templates</strong>: a document you send often, stored once, sent with new names in one call.</li>
<li><strong>Identity checks</strong>: a code emailed to a recipient before they may sign (or an ID document check, where this server offers it).</li>
<li><strong>Webhooks</strong>: your server hears when an envelope is sent, viewed, signed, completed, rejected, expired or cancelled.</li>
<li><strong>AI agents</strong>: the same actions as tools over MCP at <code>/mcp</code>.</li>
<li><strong>Test mode</strong>: test keys send free test envelopes, kept apart from live data.</li>
</ul>
<p>Enabling is free and can be repeated safely; live sends are charged from your balance.</p>
${state}
<p id="${statusId}" role="status" aria-live="polite" class="product-status"></p>
</article>`;
}
