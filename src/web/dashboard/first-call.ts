/**
 * The dashboard's first call: fetch the sample NDA Signet serves and create-and-send it to two
 * recipients, whose `{{signature, r1}}` and `{{signature, r2}}` markers become their fields, so it
 * works with no PDF or coordinates of one's own. As README's first envelope, the Idempotency-Key is
 * made inline with the node that `npm install` brought (uuidgen is missing on Debian images, and an
 * empty header is refused). Only ever a test key: a first try must cost nothing.
 */
import { escapeHtml } from './layout.js';

/** The shell text, as the page shows it and the copy button copies it; `testKey` only right after minting one. */
export function firstCallScript(publicUrl: string, testKey?: string): string {
  const base = publicUrl.replace(/\/$/, '');
  const key = testKey ? `export SIGNET_API_KEY=${testKey}` : '# First: export SIGNET_API_KEY=svc_test_… (a test key from API keys)';
  return `${key}
curl -s -o nda.pdf ${base}/samples/nda.pdf
curl -s -X POST ${base}/v1/envelopes \\
  -H "Authorization: Bearer $SIGNET_API_KEY" \\
  -H "Idempotency-Key: $(node -e 'console.log(crypto.randomUUID())')" \\
  -F pdf=@nda.pdf \\
  -F 'payload={"title":"NDA","recipients":[
    {"email":"alice@example.com","name":"Alice","role":"SIGNER"},
    {"email":"bob@example.com","name":"Bob","role":"SIGNER"}]}'`;
}

/**
 * The snippet in a box that scrolls sideways on a narrow screen (focusable, so the keyboard scrolls
 * it too) with a copy button whose "Copied" is announced by the status line beside it.
 */
export function firstCallBox(publicUrl: string, testKey?: string): string {
  return `<div class="snippet">
<pre id="first-call" tabindex="0" aria-label="First call, shell commands"><code>${escapeHtml(firstCallScript(publicUrl, testKey))}</code></pre>
<div class="snippet-actions"><button type="button" class="copy secondary" data-copy="first-call">Copy commands</button><span id="first-call-copied" class="copy-status" role="status" aria-live="polite"></span></div>
</div>`;
}
