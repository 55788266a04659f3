/*
 * Starts Swagger UI on /openapi.json (a module: it runs after the classic bundle script in the body has
 * defined SwaggerUIBundle). "Try it" goes to the server that served this page, whatever PUBLIC_URL says,
 * since the page's CSP lets it reach only its own origin.
 */
const root = document.getElementById('swagger-ui');
const here = new URL('.', window.location.href).href.replace(/\/$/, '');
const specUrl = new URL(root.dataset.specUrl, window.location.href).href;

const spec = await fetch(specUrl, { headers: { accept: 'application/json' } }).then((r) => r.json());
spec.servers = [{ url: here, description: 'this server' }];

window.SwaggerUIBundle({
  spec,
  domNode: root,
  // Deep links put an <a> inside each operation's toggle button (a nested control screen readers trip on).
  deepLinking: false,
  // No call to the public validator (nothing leaves this server), no remote config.
  validatorUrl: null,
  tryItOutEnabled: false,
  persistAuthorization: false,
  displayRequestDuration: true,
  filter: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
});

// Swagger UI leaves its server picker without a name, and renders it again at will: name it whenever it appears.
const nameServers = () => {
  const select = document.getElementById('servers');
  if (select && !select.hasAttribute('aria-label')) select.setAttribute('aria-label', 'Server');
};
new MutationObserver(nameServers).observe(root, { childList: true, subtree: true });
nameServers();
