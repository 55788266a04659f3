// The document verification page's client: sends the chosen or dropped PDF to POST /v1/documents/verify
// (a relative URL, from the page's data-verify-url) and shows the answer. Every value from the answer is
// set with textContent, never as HTML. No inline script or style: the CSP forbids both. Every message is
// the catalogue's (namespace verify-document), formatted by the signing page's i18n.js.
import { locale, t } from './i18n.js';

const app = document.getElementById('vd-app');
const input = document.getElementById('vd-file');
const drop = document.getElementById('vd-drop');
const status = document.getElementById('vd-status');
const error = document.getElementById('vd-error');
const result = document.getElementById('vd-result');
const verdict = document.getElementById('vd-verdict');
const maxBytes = Number(app.dataset.maxBytes);

const when = (iso) => {
  if (!iso) return t('verify-document.notRecorded');
  const date = new Date(iso);
  return t('verify-document.when', { local: date.toLocaleString(locale, { dateStyle: 'medium', timeStyle: 'short' }), utc: date.toISOString().slice(0, 16).replace('T', ' ') });
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
  if (!s) return t('verify-document.sigNone');
  if (!s.intact) return t('verify-document.sigBroken');
  if (s.coversWholeFile) return t('verify-document.sigValid');
  // Long-term validation data and document timestamps are appended after the seal by design.
  if (data.status === 'SEALED') return t('verify-document.sigValidAdded');
  return t('verify-document.sigValidRevision');
}

const LEVELS = { 'B-B': 'levelBB', 'B-T': 'levelBT', 'B-LT': 'levelBLT', 'B-LTA': 'levelBLTA' };
const authority = (tsa) => tsa ?? t('verify-document.timestampAuthority');

function evidenceRows(details, e) {
  if (!e) return;
  const source = e.timeSource === 'TSA' ? t('verify-document.sourceTsa', { tsa: authority(e.timestamp?.tsa) }) : t('verify-document.sourceClock');
  row(details, t('verify-document.rowSignedAt'), t('verify-document.signedAtValue', { when: when(e.signatureTime), source }));
  if (e.timestamp && e.timeSource !== 'TSA') row(details, t('verify-document.rowTimestamp'), t(e.timestamp.verified ? 'verify-document.tsNotStamping' : 'verify-document.tsNotVerifying'));
  row(details, t('verify-document.rowLevel'), LEVELS[e.level] ? t(`verify-document.${LEVELS[e.level]}`) : e.level);
  const dss = e.dss;
  row(details, t('verify-document.rowRevocation'), dss ? t('verify-document.revocation', { ocsp: dss.ocspResponses, crls: dss.crls, certs: dss.certificates }) : t('verify-document.noneEmbedded'));
  const [latest] = e.documentTimestamps;
  if (latest) row(details, t('verify-document.rowDocTimestamps'), t('verify-document.docTimestamps', { count: e.documentTimestamps.length, when: when(latest.time), tsa: authority(latest.tsa), verified: latest.verified ? 'yes' : 'no' }));
}

function showResult(data, file) {
  app.dataset.state = data.status;
  verdict.dataset.status = data.status;
  verdict.textContent = t('verify-document.heading', { status: data.status });
  // The API's summary is English; another language says the same in its own words.
  const summary = locale === 'en' ? data.summary : t('verify-document.summary', { status: data.status, date: data.envelope?.completedAt ? new Date(data.envelope.completedAt).toLocaleDateString(locale, { dateStyle: 'long' }) : '' });
  document.getElementById('vd-summary').textContent = summary;
  const details = document.getElementById('vd-details');
  details.replaceChildren();
  const env = data.envelope;
  if (env) {
    row(details, t('verify-document.rowDocument'), env.title ?? t('verify-document.untitled'));
    row(details, t('verify-document.rowEnvelope'), env.envelopeId);
    row(details, t('verify-document.rowCompleted'), when(env.completedAt));
    if (env.testMode) row(details, t('verify-document.rowMode'), t('verify-document.testMode'));
  }
  if (data.sealedByThisServer) row(details, t('verify-document.rowSignature'), signatureLine(data.signature, data));
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
    at.textContent = t('verify-document.signerAction', { role: s.role, when: when(s.signedAt) });
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
      return t('verify-document.invalidPdf');
    case 'PDF_TOO_LARGE':
      return t('verify-document.tooLarge', { mb: Math.floor(maxBytes / 1048576) });
    case 'MISSING_FILE':
      return t('verify-document.empty');
    case 'RATE_LIMITED':
      return t('verify-document.rateLimited', { seconds: data.retryAfterSeconds ?? 60 });
    default:
      return t('verify-document.generic');
  }
}

async function check(file) {
  if (!file) return;
  setError('');
  if (file.size > maxBytes) return setError(refused({ code: 'PDF_TOO_LARGE' }));
  if (file.size === 0) return setError(refused({ code: 'MISSING_FILE' }));
  app.setAttribute('aria-busy', 'true');
  status.textContent = t('verify-document.checking', { name: file.name });
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
    setError(t('verify-document.offline'));
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
