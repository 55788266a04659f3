/**
 * Creating an envelope from the dashboard (GET/POST /dashboard/envelopes/new) through app.inject with a
 * real session: an upload with markers is sent, a form resubmitted makes no second envelope, a PDF with
 * neither markers nor fields is refused with the API's own error on the form (and makes a draft when
 * asked), test mode by default for an account with a test key, and the CSRF token required.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { signInDashboard, type DashboardBrowser } from './fixtures/dashboard.js';
import { makePdf, multipart, type Part } from './fixtures/envelopes.js';

let t: TestApp;
let b: DashboardBrowser;
let markerPdf: Uint8Array;
let plainPdf: Uint8Array;
before(async () => {
  t = await createTestApp({ env: { SIGNING_ENGINE: 'local' } });
  b = await signInDashboard(t);
  markerPdf = await makePdf([[{ text: 'Sign here: {{signature, r1}}', x: 72, y: 200 }]]);
  plainPdf = await makePdf(1);
});
after(() => t.close());

type FormFields = Record<string, string>;
const body = (pdf: Uint8Array | undefined, fields: FormFields, csrf: string | undefined = b.csrf) =>
  multipart([...(csrf ? [{ name: '_csrf', value: csrf }] : []), ...Object.entries(fields).map(([name, value]): Part => ({ name, value })), ...(pdf ? [{ name: 'pdf', value: pdf, filename: 'contract.pdf' }] : [])]);
const submit = (mp: { body: Buffer; contentType: string }) =>
  t.app.inject({ method: 'POST', url: '/dashboard/envelopes/new', headers: { cookie: b.cookie, 'content-type': mp.contentType }, payload: mp.body });
const fields = (extra: FormFields = {}): FormFields => ({ idempotencyKey: randomUUID(), title: 'From the dashboard', message: 'Please sign', r1_name: 'Ada Signer', r1_email: 'ada@example.com', r1_role: 'SIGNER', mode: 'test', intent: 'send', ...extra });
const listTest = async () => (await t.app.inject({ url: '/v1/envelopes?limit=100', headers: bearer(t.customer.testApiKey) })).json().data as { envelopeId: string; status: string; title: string }[];

describe('a new envelope from the dashboard', () => {
  test('the form: a file, recipients, title and message; test mode chosen for an account with a test key', async () => {
    const res = await t.app.inject({ url: '/dashboard/envelopes/new', headers: { cookie: b.cookie } });
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /enctype="multipart\/form-data"/);
    assert.match(res.body, /name="pdf"/);
    assert.match(res.body, /name="r1_email"/);
    assert.match(res.body, /name="idempotencyKey" value="[0-9a-f-]{36}"/);
    assert.match(res.body, /value="test" checked/);
  });

  test('create and send: the markers place the fields; a resubmitted form makes no second envelope', async () => {
    const mp = body(markerPdf, fields({ title: 'Sent from the form' }));
    const res = await submit(mp);
    assert.equal(res.statusCode, 303, res.body);
    const id = /\/dashboard\/envelopes\/([0-9a-f-]{36})\?mode=test&done=created/.exec(res.headers.location!)?.[1];
    assert.ok(id, res.headers.location);
    const again = await submit(mp);
    assert.equal(again.headers.location, res.headers.location);
    const mine = (await listTest()).filter((e) => e.title === 'Sent from the form');
    assert.equal(mine.length, 1, 'one envelope for two submissions');
    const env = (await t.app.inject({ url: `/v1/envelopes/${id}`, headers: bearer(t.customer.testApiKey) })).json();
    assert.equal(env.recipients[0].email, 'ada@example.com');
    assert.equal(env.fields[0].type, 'SIGNATURE');
    assert.match((await t.app.inject({ url: res.headers.location!, headers: { cookie: b.cookie } })).body, /Envelope created/);
  });

  test('a PDF with no markers and no fields: the API\'s refusal on the form, the values kept; as a draft it is made, with Prepare fields', async () => {
    const refused = await submit(body(plainPdf, fields({ title: 'No markers' })));
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /role="alert"/);
    assert.match(refused.body, /VALIDATION_ERROR/);
    assert.match(refused.body, /no SIGNATURE field/);
    assert.match(refused.body, /value="No markers"/);
    const draft = await submit(body(plainPdf, fields({ title: 'A draft', intent: 'draft' })));
    assert.equal(draft.statusCode, 303, draft.body);
    assert.match(draft.headers.location!, /done=drafted/);
    const page = await t.app.inject({ url: draft.headers.location!, headers: { cookie: b.cookie } });
    assert.match(page.body, /href="\/dashboard\/envelopes\/[0-9a-f-]{36}\/prepare\?mode=test">Prepare fields/);
  });

  test('bad input is refused on the form with its code; nothing is created', async () => {
    const before = (await listTest()).length;
    const noPdf = await submit(body(undefined, fields()));
    assert.equal(noPdf.statusCode, 400);
    assert.match(noPdf.body, /MISSING_PDF/);
    const badEmail = await submit(body(markerPdf, fields({ r1_email: 'not-an-email' })));
    assert.equal(badEmail.statusCode, 400);
    assert.match(badEmail.body, /VALIDATION_ERROR/);
    const noKey = await submit(body(markerPdf, fields({ idempotencyKey: '' })));
    assert.equal(noKey.statusCode, 400);
    assert.match(noKey.body, /IDEMPOTENCY_KEY_INVALID/);
    assert.equal((await listTest()).length, before);
  });

  test('without the CSRF token, or without a session, the upload is refused', async () => {
    const noCsrf = await submit(body(markerPdf, fields(), ''));
    assert.equal(noCsrf.statusCode, 403);
    assert.match(noCsrf.body, /CSRF_TOKEN_INVALID/);
    const mp = body(markerPdf, fields());
    const anonymous = await t.app.inject({ method: 'POST', url: '/dashboard/envelopes/new', headers: { 'content-type': mp.contentType }, payload: mp.body });
    assert.equal(anonymous.statusCode, 401);
  });
});
