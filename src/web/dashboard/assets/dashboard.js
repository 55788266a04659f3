// The dashboard's only script: copy buttons, confirmations before destructive forms, and the products
// call (SPEC.md's POST /v1/account/products/{product}/enable with the session cookie and the CSRF header).
const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute('content') ?? '';

// The button's own label changes ("Copied"), and a status line beside it, if any, says it for screen readers.
for (const button of document.querySelectorAll('[data-copy]')) {
  // Its markup, not its text: a label may carry words only screen readers read.
  const label = button.innerHTML;
  let reset;
  button.addEventListener('click', async () => {
    const source = document.getElementById(button.getAttribute('data-copy'));
    if (!source) return;
    const status = button.parentElement?.querySelector('.copy-status');
    let said;
    try {
      await navigator.clipboard.writeText(source.textContent.trim());
      button.textContent = 'Copied';
      said = 'Copied to the clipboard';
    } catch {
      // No clipboard permission (plain http, an old browser): select the text so Ctrl+C works.
      getSelection().selectAllChildren(source);
      button.textContent = 'Press Ctrl+C';
      said = 'Selected: press Ctrl+C to copy';
    }
    if (status) status.textContent = said;
    clearTimeout(reset);
    reset = setTimeout(() => {
      button.innerHTML = label;
      if (status) status.textContent = '';
    }, 4000);
  });
}

for (const form of document.querySelectorAll('form[data-confirm]')) {
  form.addEventListener('submit', (event) => {
    if (!confirm(form.getAttribute('data-confirm'))) event.preventDefault();
  });
}

for (const button of document.querySelectorAll('button[data-enable-product]')) {
  button.addEventListener('click', async () => {
    const product = button.getAttribute('data-enable-product');
    const status = document.getElementById(button.getAttribute('aria-describedby') ?? '');
    button.setAttribute('aria-busy', 'true');
    try {
      const res = await fetch(`/v1/account/products/${encodeURIComponent(product)}/enable`, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'x-csrf-token': csrf },
      });
      const body = await res.json();
      if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
      location.reload();
    } catch (err) {
      if (status) status.textContent = `Could not enable: ${err.message}`;
    } finally {
      button.removeAttribute('aria-busy');
    }
  });
}
