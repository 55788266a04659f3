// test-lane: once (dashboard pages over services whose SQL runs on both stores in their modules' own files)
/**
 * The sender's actions on an envelope's dashboard page, through app.inject with a real session: resend,
 * cancel and reissue a link (each behind its confirmation page, CSRF-checked, followed by a notice),
 * the links with their Copy buttons, and the preview of the document as it stands. Another customer's
 * envelope is 404 for every action. The API route behind reissue is in recipient-links.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './harness.js';
import { form, signInDashboard, type DashboardBrowser } from './fixtures/dashboard.js';
import { createEnvelope, drain, getEnvelope, person, recipientToken, session, signAs } from './fixtures/envelopes.js';

let t: TestApp;
let b: DashboardBrowser;
before(async () => {
  t = await createTestApp({ env: { SIGNING_ENGINE: 'local' } });
  b = await signInDashboard(t);
});
after(() => t.close());

const page = (url: string, browser = b) => t.app.inject({ method: 'GET', url, headers: { cookie: browser.cookie } });
const post = (url: string, fields: Record<string, string> = {}, browser = b) => t.app.inject({ method: 'POST', url, ...form(browser, fields) });

describe('envelope actions in the dashboard', () => {
  test('the page offers preview, resend, cancel, each link with Copy and Reissue', async () => {
    const alice = person('act-page');
    const env = await createEnvelope(t, { title: 'Actions page', recipients: [alice] });
    await drain(t);
    const res = await page(`/dashboard/envelopes/${env.envelopeId}`);
    assert.equal(res.statusCode, 200);
    assert.match(res.body, new RegExp(`href="/dashboard/envelopes/${env.envelopeId}/preview"`));
    assert.match(res.body, new RegExp(`action="/dashboard/envelopes/${env.envelopeId}/resend"`));
    assert.match(res.body, new RegExp(`href="/dashboard/envelopes/${env.envelopeId}/cancel"`));
    assert.ok(res.body.includes(env.recipients[0].signingUrl), 'the link is shown');
    assert.match(res.body, /data-copy="link-1"/);
    assert.match(res.body, new RegExp(`href="/dashboard/envelopes/${env.envelopeId}/recipients/1/link"`));
  });

  test('resend: reminders go out, a notice follows; without the CSRF token it is refused', async () => {
    const env = await createEnvelope(t, { title: 'Resend me', recipients: [person('act-resend')] });
    await drain(t);
    const refused = await t.app.inject({ method: 'POST', url: `/dashboard/envelopes/${env.envelopeId}/resend`, headers: { cookie: b.cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
    assert.equal(refused.statusCode, 403);
    assert.match(refused.body, /CSRF_TOKEN_INVALID/);
    const res = await post(`/dashboard/envelopes/${env.envelopeId}/resend`);
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, `/dashboard/envelopes/${env.envelopeId}?done=resent`);
    assert.match((await page(res.headers.location)).body, /Reminders sent/);
  });

  test('cancel: a confirmation page, then CANCELLED with a notice; a second cancel of a completed one shows its code inline', async () => {
    const env = await createEnvelope(t, { title: 'Cancel me', recipients: [person('act-cancel')] });
    const confirm = await page(`/dashboard/envelopes/${env.envelopeId}/cancel`);
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /Cancel this envelope\?/);
    assert.match(confirm.body, new RegExp(`action="/dashboard/envelopes/${env.envelopeId}/cancel"`));
    const res = await post(`/dashboard/envelopes/${env.envelopeId}/cancel`);
    assert.equal(res.statusCode, 303, res.body);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'CANCELLED');
    assert.match((await page(res.headers.location!)).body, /Envelope cancelled/);

    const done = await createEnvelope(t, { title: 'Completed', recipients: [person('act-done')] });
    await signAs(t, tokenOfFirst(done));
    await drain(t);
    const late = await post(`/dashboard/envelopes/${done.envelopeId}/cancel`);
    assert.equal(late.statusCode, 400);
    assert.match(late.body, /CANNOT_DELETE_COMPLETED/);
    assert.match(late.body, /role="alert"/);
  });

  test('reissue: a confirmation page, then the old link is dead and the new one shown; one who acted is refused inline', async () => {
    const alice = person('act-reissue');
    const bob = person('act-reissue-bob');
    const env = await createEnvelope(t, { title: 'Reissue me', recipients: [alice, bob] });
    const old = recipientToken(env, alice.email);
    const confirm = await page(`/dashboard/envelopes/${env.envelopeId}/recipients/1/link`);
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /Reissue this link\?/);
    const res = await post(`/dashboard/envelopes/${env.envelopeId}/recipients/1/link`);
    assert.equal(res.statusCode, 303, res.body);
    assert.equal((await session(t, old)).statusCode, 404, 'the old link is dead');
    const fresh = (await getEnvelope(t, env.envelopeId)).recipients[0].signingUrl;
    const after = await page(res.headers.location!);
    assert.match(after.body, /New link issued/);
    assert.ok(after.body.includes(fresh), 'the new link is shown');

    await signAs(t, recipientToken(await getEnvelope(t, env.envelopeId), bob.email));
    const acted = await post(`/dashboard/envelopes/${env.envelopeId}/recipients/2/link`);
    assert.equal(acted.statusCode, 409);
    assert.match(acted.body, /ALREADY_ACTED/);
    assert.equal((await page(`/dashboard/envelopes/${env.envelopeId}/recipients/9/link`)).statusCode, 404);
  });

  test('preview: the document as it stands, inline, as a PDF', async () => {
    const env = await createEnvelope(t, { title: 'Preview me', recipients: [person('act-preview')] });
    const res = await page(`/dashboard/envelopes/${env.envelopeId}/preview`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/pdf');
    assert.match(String(res.headers['content-disposition']), /^inline;/);
    assert.equal(res.rawPayload.subarray(0, 5).toString(), '%PDF-');
  });

  test("another customer's envelope is 404 for every action; nothing changes", async () => {
    const env = await createEnvelope(t, { title: 'Not yours', recipients: [person('act-other')] });
    const other = await t.createCustomer();
    const ob = await signInDashboard(t, other.id);
    for (const url of [`/dashboard/envelopes/${env.envelopeId}/cancel`, `/dashboard/envelopes/${env.envelopeId}/recipients/1/link`, `/dashboard/envelopes/${env.envelopeId}/preview`]) {
      assert.equal((await page(url, ob)).statusCode, 404, url);
    }
    for (const url of [`/dashboard/envelopes/${env.envelopeId}/resend`, `/dashboard/envelopes/${env.envelopeId}/cancel`, `/dashboard/envelopes/${env.envelopeId}/recipients/1/link`]) {
      assert.equal((await post(url, {}, ob)).statusCode, 404, url);
    }
    const still = await getEnvelope(t, env.envelopeId);
    assert.notEqual(still.status, 'CANCELLED');
    assert.equal(still.recipients[0].signingUrl, env.recipients[0].signingUrl);
  });
});

const tokenOfFirst = (env: { recipients: { signingUrl: string }[] }) => new URL(env.recipients[0].signingUrl).pathname.split('/').pop()!;
