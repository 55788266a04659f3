// Signet.embed({ url, container, onEvent }): frames an embed link and hands its events to onEvent.
// Served by Signet at /embed.js (docs/embedding.md). Only messages from the frame itself, sent from the
// embed link's own origin, reach onEvent: another frame or window cannot fake a signet:signed.
(function () {
  'use strict';
  function embed(options) {
    var url = new URL(options.url);
    var container = typeof options.container === 'string' ? document.querySelector(options.container) : options.container;
    if (!container) throw new Error('Signet.embed: no container ' + options.container);
    var frame = document.createElement('iframe');
    frame.src = url.href;
    frame.title = options.title || 'Review and sign the document';
    frame.setAttribute('allow', 'clipboard-write');
    frame.style.width = '100%';
    frame.style.height = options.height || '100%';
    frame.style.border = '0';
    function onMessage(event) {
      if (event.origin !== url.origin || event.source !== frame.contentWindow) return;
      var data = event.data;
      if (!data || typeof data.type !== 'string' || data.type.indexOf('signet:') !== 0) return;
      if (typeof options.onEvent === 'function') options.onEvent({ type: data.type, envelopeId: data.envelopeId, recipientId: data.recipientId });
    }
    window.addEventListener('message', onMessage);
    container.appendChild(frame);
    return {
      frame: frame,
      destroy: function () {
        window.removeEventListener('message', onMessage);
        frame.remove();
      },
    };
  }
  window.Signet = Object.assign(window.Signet || {}, { embed: embed });
})();
