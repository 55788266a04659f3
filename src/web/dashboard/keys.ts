/** GET /dashboard/keys: mint a live or test key (shown once), the list by prefix, and revoke. */
import { csrfField, escapeHtml, scrollTable } from './layout.js';
import { firstCallBox } from './first-call.js';
import { badge, emptyState, pageHeader, shortWhen } from './parts.js';

export type KeyItem = { id: string; prefix: string; label: string | null; mode: 'live' | 'test'; createdAt: Date; lastUsedAt: Date | null; revokedAt: Date | null };

export type KeysView = {
  csrf: string;
  keys: KeyItem[];
  maxActive: number;
  publicUrl: string;
  /** Right after a mint: the key itself, this once. */
  minted?: { key: string; mode: 'live' | 'test'; prefix: string };
};

function mintedBox(m: NonNullable<KeysView['minted']>, publicUrl: string): string {
  return `<article class="new-key" aria-labelledby="new-key-title">
<header><h2 id="new-key-title">Your new ${m.mode} key</h2></header>
<p class="warning"><strong>Copy it now.</strong> This is the only time the key is shown: we keep only a fingerprint of it. If you lose it, revoke it and create another.</p>
<div class="key-row"><code id="new-key" class="secret">${escapeHtml(m.key)}</code><button type="button" class="copy" data-copy="new-key">Copy</button><span class="copy-status" role="status" aria-live="polite"></span></div>
<p><small>Send it as <code>Authorization: Bearer ${escapeHtml(m.prefix)}…</code>. ${m.mode === 'test' ? 'Test keys send free test envelopes and see only test data.' : 'Calls with a live key are charged from your balance.'}</small></p>
${m.mode === 'test' ? `<h3>Try it: your first envelope</h3>
<p>Paste this into a terminal: it fetches a sample NDA whose <code>{{signature, r1}}</code> and <code>{{signature, r2}}</code> markers become the two recipients' signature fields, and sends it with this key, for free. It then shows under <a href="/dashboard/envelopes?mode=test">Envelopes</a>.</p>
${firstCallBox(publicUrl, m.key)}` : ''}
</article>`;
}

function mintForm(v: KeysView, active: number): string {
  const full = active >= v.maxActive;
  return `<article aria-labelledby="mint-title">
<header><h2 id="mint-title">Create a key</h2></header>
<form method="post" action="/dashboard/keys" class="mint">
${csrfField(v.csrf)}
<fieldset>
<legend>Mode</legend>
<label><input type="radio" name="mode" value="test" checked aria-describedby="mode-test-note"><span>Test <small id="mode-test-note" class="muted">free test sends, sees test data only</small></span></label>
<label><input type="radio" name="mode" value="live" aria-describedby="mode-live-note"><span>Live <small id="mode-live-note" class="muted">real sends, charged from your balance</small></span></label>
</fieldset>
<label for="mint-label">Label <small class="muted">(optional: what the key is for, up to 60 characters)</small></label>
<input id="mint-label" name="label" maxlength="60" placeholder="CI, staging server, Zapier…" autocomplete="off">
<button type="submit"${full ? ' disabled aria-describedby="keys-full"' : ''}>Create key</button>
${full ? `<p id="keys-full"><small>You have ${v.maxActive} active keys, the most allowed: revoke one first.</small></p>` : ''}
</form>
</article>`;
}

function keyRow(v: KeysView, k: KeyItem): string[] {
  const action = k.revokedAt
    ? '<span class="muted">—</span>'
    : `<form method="post" action="/dashboard/keys/${escapeHtml(k.id)}/revoke" class="inline" data-confirm="Revoke ${escapeHtml(k.prefix)}…? Calls with this key will be refused at once.">${csrfField(v.csrf)}<button type="submit" class="secondary outline danger" aria-label="Revoke ${escapeHtml(k.prefix)}">Revoke</button></form>`;
  const label = `<form method="post" action="/dashboard/keys/${escapeHtml(k.id)}/label" class="label-form">${csrfField(v.csrf)}<input name="label" maxlength="60" value="${escapeHtml(k.label ?? '')}" aria-label="Label of ${escapeHtml(k.prefix)}" placeholder="No label"><button type="submit" class="secondary outline" aria-label="Save the label of ${escapeHtml(k.prefix)}">Save</button></form>`;
  return [
    `<code>${escapeHtml(k.prefix)}…</code>`,
    label,
    badge(k.mode, k.mode === 'live' ? 'good' : 'wait'),
    shortWhen(k.createdAt),
    k.lastUsedAt ? shortWhen(k.lastUsedAt) : '<span class="muted">Never</span>',
    k.revokedAt ? `${badge('revoked', 'bad')} <small class="muted">${shortWhen(k.revokedAt)}</small>` : badge('active', 'good'),
    action,
  ];
}

export function keysPage(v: KeysView): string {
  const active = v.keys.filter((k) => !k.revokedAt).length;
  const list = v.keys.length
    ? scrollTable(['Key', 'Label', 'Mode', 'Created (UTC)', 'Last used (UTC)', 'Status', 'Action'], v.keys.map((k) => keyRow(v, k)))
    : emptyState('No API keys yet', '<p>Create a test key above to try the API for free.</p>');
  return `${pageHeader({ title: 'API keys', lead: 'Keys authenticate your server to the Signet API. Keep them secret.' })}
${v.minted ? mintedBox(v.minted, v.publicUrl) : ''}
${mintForm(v, active)}
<article aria-labelledby="keys-title"><header class="split"><h2 id="keys-title">Your keys</h2><small>${active} active of ${v.maxActive} allowed</small></header>${list}</article>`;
}
