// Events to the page that frames an embed link (docs/embedding.md). Posted only when the page is framed
// and was opened as an embed link, and only to the account's allowed origins, one at a time: the browser
// delivers each message only if the parent's origin is that one, so a page on any other origin (one
// that framed us despite the CSP, or navigated the parent away) never reads an event. Never '*'.
const root = document.getElementById('signing-app');
const origins = (root?.dataset.embedOrigins ?? '').split(' ').filter(Boolean);

export function notifyParent(type) {
  if (window.parent === window || origins.length === 0) return;
  const message = { type: `signet:${type}`, envelopeId: root.dataset.envelopeId, recipientId: Number(root.dataset.recipientId) };
  for (const origin of origins) window.parent.postMessage(message, origin);
}
