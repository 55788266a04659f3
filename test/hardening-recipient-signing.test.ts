import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { bearer, createTestApp, type TestApp } from './harness.js';
import {
  account,
  assertError,
  complete,
  count,
  createEnvelope,
  drain,
  envelopeBody,
  type Envelope,
  eventTypes,
  execSql,
  getEnvelope,
  inTx,
  makePdf,
  newKey,
  outbox,
  person,
  PNG_DATA_URL,
  postMultipart,
  recipientToken,
  reject,
  samplePdf,
  session,
  sigField,
  signAs,
  toOf,
} from './fixtures/envelopes.js';

// The worker is off in test apps: a create's distribution job waits in the queue until drain(),
// which models a backlog of distribution jobs.
let t: TestApp;
before(async () => (t = await createTestApp({ creditCents: 5000 })));
after(() => t.close());

const invitationsTo = async (email: string) => (await outbox(t)).filter((m) => toOf(m).includes(email.toLowerCase()) && /^Please /.test(m.subject ?? ''));
const document = (token: string) => t.app.inject({ url: `/sign/${token}/document` });
const del = (id: string) => t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${id}`, headers: bearer(t.customer.apiKey) });
const post = (payload: unknown, pdfs?: Uint8Array[], url?: string) => (async () => postMultipart(t, envelopeBody(pdfs ?? [await samplePdf()], payload), { url }))();
const sign = { signature: { kind: 'drawn', image: PNG_DATA_URL } };

/** Moves both copies of the signing window into the past, as if the sweep had not run yet. */
async function pastWindow(env: Envelope) {
  await execSql(t, sql`UPDATE envelopes SET expires_at = now() - interval '1 minute' WHERE id = ${env.envelopeId}`);
  await execSql(t, sql`UPDATE engine_documents SET expires_at = now() - interval '1 minute' WHERE id = ${env.engineEnvelopeId}`);
}

describe('every SIGNER must sign (a SIGNATURE field per SIGNER when sent)', () => {
  test('create-and-send with a SIGNER who has no SIGNATURE field is VALIDATION_ERROR and costs nothing', async () => {
    const a = person('nosig-a');
    const b = person('nosig-b');
    const before = (await account(t)).creditsCents;
    const none = assertError(await post({ recipients: [a, b], fields: [sigField(a.email)] }), 400, 'VALIDATION_ERROR');
    assert.equal(none.details[0].path, 'payload.recipients.1');
    assert.match(none.error, /SIGNATURE/);
    const textOnly = await post({ recipients: [a, b], fields: [sigField(a.email), sigField(b.email, { type: 'TEXT' })] });
    assert.equal(assertError(textOnly, 400, 'VALIDATION_ERROR').details[0].path, 'payload.recipients.1');
    // Markers alike: r2 has only a text marker.
    const pdf = await makePdf([[{ text: '{{signature, r1}}', x: 72, y: 600 }, { text: '{{text, r2}}', x: 300, y: 600 }]]);
    assertError(await post({ recipients: [a, b] }, [pdf]), 400, 'VALIDATION_ERROR');
    assert.equal((await account(t)).creditsCents, before);
    // Non-signers need none.
    const ok = await post({ recipients: [a, person('nosig-cc', 'CC'), person('nosig-appr', 'APPROVER')], fields: [sigField(a.email)] });
    assert.equal(ok.statusCode, 201, ok.body);
  });

  test('a draft may lack them, but its send is refused until every SIGNER has one', async () => {
    const s = person('draft-nosig');
    const created = await post({ recipients: [{ ...s, fields: [] }] }, undefined, '/v1/envelopes/draft');
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().envelopeId;
    const before = (await account(t)).creditsCents;
    const headers = { ...bearer(t.customer.apiKey), 'content-type': 'application/json' };
    const send = () => t.app.inject({ method: 'POST', url: `/v1/envelopes/${id}/send`, headers: { ...headers, 'idempotency-key': newKey() }, payload: {} });
    const refused = assertError(await send(), 400, 'VALIDATION_ERROR');
    assert.match(refused.error, new RegExp(s.email));
    assert.equal((await getEnvelope(t, id)).status, 'DRAFT');
    assert.equal((await account(t)).creditsCents, before, 'a refused send charges nothing');
    const add = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${id}/fields`, headers, payload: { fields: [sigField(s.email)] } });
    assert.equal(add.statusCode, 200, add.body);
    assert.equal((await send()).statusCode, 200);
  });
});

describe('the signing window is enforced when a recipient acts', () => {
  test('complete and reject after expiresAt answer 410 ENVELOPE_NOT_ACTIVE before the sweep runs', async () => {
    const s = person('late');
    const s2 = person('late-2');
    const env = await createEnvelope(t, { recipients: [s, s2] });
    await drain(t);
    await pastWindow(env);
    const token = recipientToken(env, s.email);
    const body = (await session(t, token)).json();
    assert.equal(body.canAct, false);
    assert.equal(body.reason, 'expired');
    const fieldId = env.fields.find((f) => f.recipientEmail === s.email)!.fieldId;
    assertError(await complete(t, token, { fields: [{ fieldId }], ...sign }), 410, 'ENVELOPE_NOT_ACTIVE');
    assertError(await reject(t, recipientToken(env, s2.email), 'too late'), 410, 'ENVELOPE_NOT_ACTIVE');
    const stored = await getEnvelope(t, env.envelopeId);
    assert.ok(stored.recipients.every((r) => r.signingStatus === 'NOT_SIGNED'), JSON.stringify(stored.recipients));
    assert.equal(stored.status, 'SENT');
  });
});

describe('fields of a sent envelope', () => {
  test('adding or removing a field after the send is 409 ENVELOPE_NOT_DRAFT, not an engine failure', async () => {
    const s = person('sentfields');
    const env = await createEnvelope(t, { recipients: [s] });
    const url = `/v1/envelopes/${env.envelopeId}/fields`;
    const headers = { ...bearer(t.customer.apiKey), 'content-type': 'application/json' };
    assertError(await t.app.inject({ method: 'POST', url, headers, payload: { fields: [sigField(s.email)] } }), 409, 'ENVELOPE_NOT_DRAFT');
    assertError(await t.app.inject({ method: 'DELETE', url: `${url}/${env.fields[0].fieldId}`, headers: bearer(t.customer.apiKey) }), 409, 'ENVELOPE_NOT_DRAFT');
    await drain(t);
    assertError(await t.app.inject({ method: 'POST', url, headers, payload: { fields: [sigField(s.email)] } }), 409, 'ENVELOPE_NOT_DRAFT');
    assertError(await t.app.inject({ method: 'DELETE', url: `${url}/${env.fields[0].fieldId}`, headers: bearer(t.customer.apiKey) }), 409, 'ENVELOPE_NOT_DRAFT');
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const responses = (p: string, m: string) => Object.keys(doc.paths[p][m].responses);
    assert.ok(responses('/v1/envelopes/{id}/fields', 'post').includes('409'));
    assert.ok(responses('/v1/envelopes/{id}/fields/{fid}', 'delete').includes('409'));
  });
});

describe('signing before the distribution job ran (PENDING)', () => {
  test('the only signer signs at once; no invitation follows; events stay in order', async () => {
    const s = person('pend-one');
    const env = await createEnvelope(t, { recipients: [s] });
    assert.equal(env.status, 'PENDING');
    const token = recipientToken(env, s.email);
    const body = (await session(t, token)).json();
    assert.equal(body.canAct, true, JSON.stringify(body));
    assert.equal(body.reason, null);
    await signAs(t, token);
    await drain(t);
    const stored = await getEnvelope(t, env.envelopeId);
    assert.equal(stored.status, 'COMPLETED');
    // The view and the consent are recorded when they happened (before the distribution); the signature comes after SENT.
    assert.deepEqual(await eventTypes(t, env.envelopeId), ['DOCUMENT_VIEWED', 'RECIPIENT_CONSENTED', 'DOCUMENT_SENT', 'DOCUMENT_SIGNED', 'DOCUMENT_COMPLETED']);
    assert.equal((await invitationsTo(s.email)).length, 0, 'who signed is not invited to sign');
  });

  test('parallel signers and a viewer: the others are invited once; PARTIALLY_SIGNED follows SENT', async () => {
    const s1 = person('pend-p1');
    const s2 = person('pend-p2');
    const v = person('pend-v', 'VIEWER');
    const env = await createEnvelope(t, { recipients: [s1, s2, v] });
    await signAs(t, recipientToken(env, s1.email));
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'PARTIALLY_SIGNED');
    await drain(t);
    const stored = await getEnvelope(t, env.envelopeId);
    assert.equal(stored.status, 'PARTIALLY_SIGNED');
    const events = await eventTypes(t, env.envelopeId);
    assert.equal(count(events, 'DOCUMENT_SENT'), 1, events.join());
    assert.ok(events.indexOf('DOCUMENT_SENT') < events.indexOf('DOCUMENT_SIGNED'), events.join());
    assert.equal((await invitationsTo(s1.email)).length, 0);
    assert.equal((await invitationsTo(s2.email)).length, 1);
    assert.equal((await invitationsTo(v.email)).length, 1);
    assert.equal(stored.recipients.find((r) => r.email === s2.email)!.sendStatus, 'SENT');
    await signAs(t, recipientToken(env, s2.email));
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');
  });

  test('in signing order: the first signs while PENDING, the second is invited once, never the first', async () => {
    const s1 = person('pend-o1', 'SIGNER', { signingOrder: 1 });
    const s2 = person('pend-o2', 'SIGNER', { signingOrder: 2 });
    const env = await createEnvelope(t, { recipients: [s1, s2] });
    const early = await session(t, recipientToken(env, s2.email));
    assert.equal(early.json().reason, 'waiting');
    assertError(await complete(t, recipientToken(env, s2.email), { fields: [], ...sign }), 409, 'NOT_YOUR_TURN');
    await signAs(t, recipientToken(env, s1.email));
    await drain(t);
    assert.equal((await invitationsTo(s1.email)).length, 0);
    assert.equal((await invitationsTo(s2.email)).length, 1);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'PARTIALLY_SIGNED');
  });

  test('a signer may decline while PENDING: REJECTED, nobody is invited afterwards', async () => {
    const s1 = person('pend-r1');
    const s2 = person('pend-r2');
    const env = await createEnvelope(t, { recipients: [s1, s2] });
    const res = await reject(t, recipientToken(env, s1.email), 'no');
    assert.equal(res.statusCode, 200, res.body);
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'REJECTED');
    assert.equal((await invitationsTo(s2.email)).length, 0);
  });
});

describe('a terminal state is final for the recipient link', () => {
  async function twoParty(tag: string) {
    const s = person(`${tag}-s`);
    const v = person(`${tag}-v`, 'VIEWER');
    const env = await createEnvelope(t, { recipients: [s, v] });
    await drain(t);
    return { env, s, v, viewer: recipientToken(env, v.email), signer: recipientToken(env, s.email) };
  }

  async function assertFinal(env: Envelope, token: string, status: string) {
    const events = await eventTypes(t, env.envelopeId);
    assertError(await document(token), 410, 'ENVELOPE_NOT_ACTIVE');
    const res = await session(t, token);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().envelope.status, status);
    assert.equal(res.json().recipient.readStatus, 'NOT_OPENED');
    assert.equal(res.json().documentUrl, null, 'the page offers no document it would not serve');
    assert.deepEqual(await eventTypes(t, env.envelopeId), events, 'no view recorded after the terminal state');
  }

  test('CANCELLED', async () => {
    const p = await twoParty('fin-cancel');
    assert.equal((await document(p.signer)).statusCode, 200, 'served while active');
    assert.equal((await del(p.env.envelopeId)).statusCode, 200);
    await assertFinal(p.env, p.viewer, 'CANCELLED');
    assertError(await document(p.signer), 410, 'ENVELOPE_NOT_ACTIVE');
  });

  test('REJECTED', async () => {
    const p = await twoParty('fin-reject');
    assert.equal((await reject(t, p.signer, 'no')).statusCode, 200);
    await assertFinal(p.env, p.viewer, 'REJECTED');
  });

  test('EXPIRED', async () => {
    const p = await twoParty('fin-expire');
    await pastWindow(p.env);
    await inTx(t, (tx) => t.container.envelopes.expireDue(tx));
    assert.equal((await getEnvelope(t, p.env.envelopeId)).status, 'EXPIRED');
    await assertFinal(p.env, p.viewer, 'EXPIRED');
  });

  test('past the signing window before the sweep: no document, no view', async () => {
    const p = await twoParty('fin-window');
    await pastWindow(p.env);
    await assertFinal(p.env, p.viewer, 'SENT');
  });

  test('COMPLETED: the sealed PDF, and no view recorded', async () => {
    const p = await twoParty('fin-done');
    await signAs(t, p.signer);
    await drain(t);
    assert.equal((await getEnvelope(t, p.env.envelopeId)).status, 'COMPLETED');
    const events = await eventTypes(t, p.env.envelopeId);
    const res = await document(p.viewer);
    assert.equal(res.statusCode, 200);
    const signed = await t.app.inject({ url: `/v1/envelopes/${p.env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(signed.statusCode, 200);
    assert.ok(res.rawPayload.equals(signed.rawPayload), 'the link serves the sealed PDF');
    const s = await session(t, p.viewer);
    assert.equal(s.json().recipient.readStatus, 'NOT_OPENED');
    assert.deepEqual(await eventTypes(t, p.env.envelopeId), events);
  });
});
