// The document verification page's client: sends the chosen or dropped PDF to POST /v1/documents/verify
// (a relative URL, from the page's data-verify-url) and shows the answer. Every value from the answer is
// set with textContent, never as HTML. No inline script or style: the CSP forbids both.

const app = document.getElementById('vd-app');
const input = document.getElementById('vd-file');
const drop = document.getElementById('vd-drop');
const status = document.getElementById('vd-status');
const error = document.getElementById('vd-error');
const result = document.getElementById('vd-result');
const verdict = document.getElementById('vd-verdict');
const maxBytes = Number(app.dataset.maxBytes);

const HEADINGS = {
  SEALED: 'Sealed by this server and unchanged',
  MODIFIED: 'Changed since it was sealed',
  NOT_SEALED: 'Not sealed by this server',
};

const when = (iso) => {
  if (!iso) return 'not recorded';
  const date = new Date(iso);
  return `${date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })} (${date.toISOString().slice(0, 16).replace('T', ' ')} UTC)`;
};

function setError(text) {
  error.textContent = text;
  error.hidden = text === '';
}

function row(list, term, value) {
  const dt = document.createElement('dt');
  dt.textContent = term;
  const dd = document.createElement('dd');
  dd.textContent = value;
  list.append(dt, dd);
}

function signatureLine(s, data) {
  if (!s) return 'No signature of this server';
  if (!s.intact) return "This server's signature no longer matches the content";
  if (s.coversWholeFile) return 'Valid seal signature';
  // Long-term validation data and document timestamps are appended after the seal by design.
  if (data.status === 'SEALED') return 'Valid seal signature; validation data or timestamps were added after it, as sealed';
  return 'Valid seal signature over the sealed revision; content was added after it';
}

const LEVELS = {
  'B-B': 'PAdES B-B: a signature, with the time of the server that made it',
  'B-T': 'PAdES B-T: a signature with a trusted timestamp',
  'B-LT': 'PAdES B-LT: trusted timestamp, with certificates and revocation data embedded for long-term checking',
  'B-LTA': 'PAdES B-LTA: B-LT, with a document timestamp over it all for archiving',
};

function evidenceRows(details, e) {
  if (!e) return;
  const source = e.timeSource === 'TSA' ? `trusted time from ${e.timestamp?.tsa ?? 'a timestamp authority'}` : "the sealing server's own clock, not a trusted timestamp";
  row(details, 'Signed at', `${when(e.signatureTime)}: ${source}`);
  if (e.timestamp && e.timeSource !== 'TSA') row(details, 'Timestamp', e.timestamp.verified ? 'Present, but it does not stamp this signature' : 'Present, but it does not verify');
  row(details, 'Level', LEVELS[e.level] ?? e.level);
  const dss = e.dss;
  row(details, 'Revocation data', dss ? `${dss.ocspResponses} OCSP ${dss.ocspResponses === 1 ? 'response' : 'responses'}, ${dss.crls} ${dss.crls === 1 ? 'CRL' : 'CRLs'} and ${dss.certificates} ${dss.certificates === 1 ? 'certificate' : 'certificates'} embedded` : 'None embedded');
  const [latest] = e.documentTimestamps;
  if (latest) row(details, 'Document timestamps', `${e.documentTimestamps.length}; latest ${when(latest.time)} from ${latest.tsa ?? 'a timestamp authority'}${latest.verified ? '' : ' (does not verify)'}`);
}

function showResult(data, file) {
  app.dataset.state = data.status;
  verdict.dataset.status = data.status;
  verdict.textContent = HEADINGS[data.status] ?? data.status;
  document.getElementById('vd-summary').textContent = data.summary;
  const details = document.getElementById('vd-details');
  details.replaceChildren();
  const env = data.envelope;
  if (env) {
    row(details, 'Document', env.title ?? '(untitled)');
    row(details, 'Envelope', env.envelopeId);
    row(details, 'Completed', when(env.completedAt));
    if (env.testMode) row(details, 'Mode', 'Test send: not a binding signature');
  }
  if (data.sealedByThisServer) row(details, 'Signature', signatureLine(data.signature, data));
  evidenceRows(details, data.evidence);
  const signers = document.getElementById('vd-signers');
  signers.replaceChildren();
  for (const s of env?.signers ?? []) {
    const li = document.createElement('li');
    const name = document.createElement('span');
    name.className = 'signer-name';
    name.textContent = s.name;
    const at = document.createElement('span');
    at.className = 'signer-when';
    at.textContent = `${s.role === 'APPROVER' ? 'Approved' : 'Signed'} ${when(s.signedAt)}`;
    li.append(name, at);
    signers.append(li);
  }
  document.getElementById('vd-signers-block').hidden = signers.children.length === 0;
  document.getElementById('vd-filename').textContent = file.name;
  document.getElementById('vd-sha').textContent = data.sha256;
  drop.hidden = true;
  result.hidden = false;
  status.textContent = '';
  verdict.focus();
}

/** Every refusal the route answers with, in words a person can act on. */
function refused(data) {
  switch (data.code) {
    case 'INVALID_PDF':
      return 'That file is not a PDF. Choose the PDF you received.';
    case 'PDF_TOO_LARGE':
      return `That file is larger than ${Math.floor(maxBytes / 1048576)} MB, more than any document this server seals.`;
    case 'MISSING_FILE':
      return 'That file is empty.';
    case 'RATE_LIMITED':
      return `Too many checks from your network. Try again in ${data.retryAfterSeconds ?? 60} seconds.`;
    default:
      return 'Something went wrong. Please try again in a moment.';
  }
}

async function check(file) {
  if (!file) return;
  setError('');
  if (file.size > maxBytes) return setError(refused({ code: 'PDF_TOO_LARGE' }));
  if (file.size === 0) return setError(refused({ code: 'MISSING_FILE' }));
  app.setAttribute('aria-busy', 'true');
  status.textContent = `Checking ${file.name}…`;
  try {
    const body = new FormData();
    body.append('file', file, file.name);
    const res = await fetch(app.dataset.verifyUrl, { method: 'POST', body, cache: 'no-store', credentials: 'omit' });
    let data = {};
    try {
      data = await res.json();
    } catch {
      // A proxy's HTML error page: the generic message covers it.
    }
    if (!res.ok) {
      status.textContent = '';
      return setError(refused(data));
    }
    showResult(data, file);
  } catch {
    status.textContent = '';
    setError('Could not reach the server. Check your connection and try again.');
  } finally {
    app.removeAttribute('aria-busy');
    input.value = '';
  }
}

input.addEventListener('change', () => check(input.files[0]));
for (const type of ['dragenter', 'dragover']) {
  drop.addEventListener(type, (event) => {
    event.preventDefault();
    drop.classList.add('dragging');
  });
}
drop.addEventListener('dragleave', () => drop.classList.remove('dragging'));
drop.addEventListener('drop', (event) => {
  event.preventDefault();
  drop.classList.remove('dragging');
  check(event.dataTransfer?.files[0]);
});
// A file dropped beside the box must not make the browser navigate away to it.
window.addEventListener('dragover', (event) => event.preventDefault());
window.addEventListener('drop', (event) => event.preventDefault());

document.getElementById('vd-again').addEventListener('click', () => {
  result.hidden = true;
  drop.hidden = false;
  app.dataset.state = 'choose';
  setError('');
  input.focus();
});
app.dataset.ready = 'true';
