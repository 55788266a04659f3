/**
 * Reassignment (PATCH /v1/envelopes/{id}/recipients/{recipient}) and delegation (POST
 * /sign/{token}/delegate): the new person takes the place, its fields and turn; the old link dies; the
 * event list, the certificate and opt-in webhooks show who handed over to whom. Mail is read from a
 * real SMTP server. The common route checks (auth, another customer, malformed JSON) are in
 * test/common-routes.test.ts; another customer's 404 is checked here too.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { verifications, webhookDeliveries } from '../src/db/schema/index.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import type { TestSmtpServer } from './fixtures/smtp.js';
import {
  assertError,
  consent,
  createEnvelope,
  drain,
  envelopeBody,
  execSql,
  getEnvelope,
  newKey,
  person,
  postMultipart,
  recipientToken,
  samplePdf,
  session,
  sigField,
  signAs,
  startAppWithSmtp,
  stopAppWithSmtp,
  tokenOf,
  toOf,
} from './fixtures/envelopes.js';

let smtp: TestSmtpServer;
let t: TestApp;
before(async () => ({ smtp, t } = await startAppWithSmtp({ SIGNING_ENGINE: 'local', WEBHOOK_ALLOW_HOSTS: '127.0.0.1' })));
after(() => stopAppWithSmtp(t, smtp));

const reassign = (envelopeId: string, recipient: string, body: unknown, headers: Record<string, string> = {}, apiKey = t.customer.apiKey) =>
  t.app.inject({ method: 'PATCH', url: `/v1/envelopes/${envelopeId}/recipients/${encodeURIComponent(recipient)}`, headers: { ...bearer(apiKey), ...headers }, payload: body as object });
const delegate = (token: string, body: unknown) => t.app.inject({ method: 'POST', url: `/sign/${token}/delegate`, payload: body as object });
const mailsTo = (email: string) => smtp.messages.filter((m) => toOf(m).includes(email.toLowerCase()));
const linksIn = (text: string | undefined) => [...new Set((text ?? '').match(/https?:\/\/\S+\/sign\/[A-Za-z0-9_-]{43}/g) ?? [])];
const certificateOf = async (envelopeId: string) => {
  const sealed = await t.app.inject({ url: `/v1/envelopes/${envelopeId}/download`, headers: bearer(t.customer.apiKey) });
  assert.equal(sealed.statusCode, 200, sealed.body);
  return execFileSync('pdftotext', ['-', '-'], { input: sealed.rawPayload, encoding: 'utf8' });
};

describe('reassignment by the sender', () => {
  test('before their turn: the new person takes the place and fields, is invited at their turn, signs; the old link is dead; event and certificate name the hand-over', async () => {
    const first = person('ra-first', 'SIGNER', { signingOrder: 1 });
    const second = person('ra-second', 'SIGNER', { signingOrder: 2 });
    const carol = person('ra-carol');
    const env = await createEnvelope(t, { title: 'Reassigned later', recipients: [first, second] });
    await drain(t);
    const oldSecond = recipientToken(env, second.email);

    const res = await reassign(env.envelopeId, '2', { email: carol.email, name: carol.name });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.deepEqual([body.recipient.email, body.recipient.name, body.recipient.role, body.previous.email, body.invitationSent, body.verificationId], [carol.email, carol.name, 'SIGNER', second.email, false, null]);
    assertError(await session(t, oldSecond), 404, 'SIGNING_LINK_INVALID');

    const after = await getEnvelope(t, env.envelopeId);
    assert.deepEqual(after.recipients.map((r) => r.email), [first.email, carol.email], 'the place keeps its position');
    assert.deepEqual(after.fields.map((f) => f.recipientEmail).sort(), [first.email, carol.email].sort(), 'the fields moved');
    const ev = after.events!.find((e) => e.eventType === 'RECIPIENT_REASSIGNED') as { event: string; recipientEmail: string; details: unknown } | undefined;
    assert.ok(ev, JSON.stringify(after.events));
    assert.equal(ev.event, 'envelope.recipient_replaced');
    assert.deepEqual(ev.details, { from: { name: second.name, email: second.email }, to: { name: carol.name, email: carol.email }, by: 'sender' });

    await drain(t);
    assert.equal(mailsTo(carol.email).length, 0, 'not their turn yet');
    await signAs(t, recipientToken(env, first.email));
    await drain(t);
    const [invitation] = mailsTo(carol.email);
    assert.deepEqual(linksIn(invitation?.text), [body.recipient.signingUrl]);
    assert.equal(mailsTo(second.email).length, 0, 'the replaced person was never invited');
    await signAs(t, tokenOf(body.recipient.signingUrl));
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');
    const text = await certificateOf(env.envelopeId);
    assert.match(text, /Hand-overs \(1\)/);
    assert.match(text, /Reassigned by the sender/);
    assert.ok(text.includes(second.email) && text.includes(carol.email), text);
  });

  test('at their turn: invited at once with the new link; their consent and view start over; a retry with the Idempotency-Key answers the same', async () => {
    const alice = person('ra-now');
    const dan = person('ra-dan');
    const env = await createEnvelope(t, { title: 'Reassigned now', recipients: [alice] });
    await drain(t);
    const oldToken = recipientToken(env, alice.email);
    assert.equal((await consent(t, oldToken)).statusCode, 200);
    const key = newKey();
    const res = await reassign(env.envelopeId, alice.email, { email: dan.email, name: dan.name }, { 'idempotency-key': key });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().invitationSent, true);
    const replay = await reassign(env.envelopeId, alice.email, { email: dan.email, name: dan.name }, { 'idempotency-key': key });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body, res.body);
    const s = await session(t, tokenOf(res.json().recipient.signingUrl));
    assert.equal(s.statusCode, 200);
    assert.deepEqual([s.json().recipient.email, s.json().consent.given], [dan.email, false], 'consent starts over');
    await drain(t);
    assert.deepEqual(linksIn(mailsTo(dan.email)[0]?.text), [res.json().recipient.signingUrl]);
    assert.equal(mailsTo(dan.email).length, 1, 'one invitation for one reassignment');
    assertError(await session(t, oldToken), 404, 'SIGNING_LINK_INVALID');
  });

  test('a DRAFT is simply edited: no event, no mail, its send invites the new person', async () => {
    const alice = person('ra-draft');
    const erin = person('ra-erin');
    const res = await postMultipart(t, envelopeBody([await samplePdf()], { title: 'Draft edit', recipients: [alice], fields: [sigField(alice.email)] }), { url: '/v1/envelopes/draft' });
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json().envelopeId;
    const edit = await reassign(id, '1', { email: erin.email, name: erin.name });
    assert.equal(edit.statusCode, 200, edit.body);
    assert.equal(edit.json().invitationSent, false);
    const draft = await getEnvelope(t, id);
    assert.deepEqual([draft.recipients[0].email, draft.fields[0].recipientEmail, draft.events!.length], [erin.email, erin.email, 0]);
    const sent = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${id}/send`, headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey() } });
    assert.equal(sent.statusCode, 200, sent.body);
    await drain(t);
    assert.equal(mailsTo(erin.email).length, 1);
    assert.equal(mailsTo(alice.email).length, 0);
  });

  test('a gated place gets a new verification for the new address, charged like the first; the old one is canceled', async () => {
    const alice = { ...person('ra-gated'), verificationRequired: true };
    const fay = person('ra-fay');
    const env = await createEnvelope(t, { title: 'Gated', recipients: [alice] });
    const before = await t.container.db.select().from(verifications).where(eq(verifications.envelopeId, env.envelopeId));
    const res = await reassign(env.envelopeId, '1', { email: fay.email, name: fay.name });
    assert.equal(res.statusCode, 200, res.body);
    const rows = await t.container.db.select().from(verifications).where(eq(verifications.envelopeId, env.envelopeId));
    assert.equal(rows.length, 2);
    const fresh = rows.find((r) => r.id === res.json().verificationId)!;
    assert.deepEqual([fresh.email, fresh.status, fresh.chargedMicros], [fay.email, 'pending', before[0].chargedMicros]);
    assert.equal(rows.find((r) => r.id === before[0].id)!.status, 'canceled');
    assert.equal((await getEnvelope(t, env.envelopeId)).recipients[0].verificationId, fresh.id);
  });

  test('opt-in webhook: envelope.recipient_replaced reaches a registration that names it, not one with "*"', async () => {
    const reg = async (events: string[]) => {
      const r = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(t.customer.apiKey), payload: { url: 'http://127.0.0.1:9/hook', events } });
      assert.equal(r.statusCode, 201, r.body);
      return r.json().id as string;
    };
    const named = await reg(['envelope.recipient_replaced']);
    const star = await reg(['*']);
    const env = await createEnvelope(t, { title: 'Hooked', recipients: [person('ra-hook')] });
    assert.equal((await reassign(env.envelopeId, '1', { email: person('ra-hooked').email, name: 'Hooked Person' })).statusCode, 200);
    const rows = await t.container.db.select().from(webhookDeliveries).where(eq(webhookDeliveries.envelopeId, env.envelopeId));
    const replaced = rows.filter((d) => d.event === 'envelope.recipient_replaced');
    assert.deepEqual(replaced.map((d) => d.webhookId), [named]);
    assert.equal((replaced[0].payload.envelope as { handover: { by: string } }).handover.by, 'sender');
    assert.ok(!rows.some((d) => d.webhookId === star && d.event === 'envelope.recipient_replaced'));
    for (const id of [named, star]) await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${id}`, headers: bearer(t.customer.apiKey) });
  });

  test('refusals, each with its code; another customer gets 404; malformed input 400', async () => {
    const alice = person('rf-alice');
    const bob = person('rf-bob');
    const env = await createEnvelope(t, { title: 'Refusals', recipients: [alice, bob] });
    assertError(await reassign(env.envelopeId, '1', { email: bob.email.toUpperCase() }), 409, 'RECIPIENT_EMAIL_TAKEN');
    assertError(await reassign(env.envelopeId, '1', { name: alice.name, email: alice.email }), 400, 'VALIDATION_ERROR');
    assertError(await reassign(env.envelopeId, '1', {}), 400, 'VALIDATION_ERROR');
    assertError(await reassign(env.envelopeId, '1', { email: 'not-an-email' }), 400, 'VALIDATION_ERROR');
    assertError(await reassign(env.envelopeId, '1', { email: 42 }), 400, 'VALIDATION_ERROR');
    assertError(await reassign(env.envelopeId, '1', { name: 'x'.repeat(201) }), 400, 'VALIDATION_ERROR');
    assertError(await reassign(env.envelopeId, '1', { name: 'A', role: 'VIEWER' }), 400, 'VALIDATION_ERROR');
    assertError(await reassign(env.envelopeId, '3', { name: 'Nobody' }), 404, 'RECIPIENT_NOT_FOUND');
    const other = await t.createCustomer();
    assertError(await reassign(env.envelopeId, '1', { name: 'Thief' }, {}, other.apiKey), 404, 'ENVELOPE_NOT_FOUND');
    const bad = await t.app.inject({ method: 'PATCH', url: `/v1/envelopes/${env.envelopeId}/recipients/1`, headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' }, payload: '{"name":' });
    assert.equal(bad.statusCode, 400);

    await signAs(t, recipientToken(env, alice.email));
    assertError(await reassign(env.envelopeId, '1', { name: 'Too late' }), 409, 'ALREADY_ACTED');

    // Five replacements of one place, then no more.
    for (let i = 1; i <= 5; i++) assert.equal((await reassign(env.envelopeId, '2', { email: person(`rf-chain${i}`).email })).statusCode, 200);
    assertError(await reassign(env.envelopeId, '2', { email: person('rf-chain6').email }), 409, 'HANDOVER_LIMIT_REACHED');

    const cancelled = await createEnvelope(t, { title: 'Cancelled', recipients: [person('rf-c')] });
    await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${cancelled.envelopeId}`, headers: bearer(t.customer.apiKey) });
    assertError(await reassign(cancelled.envelopeId, '1', { name: 'Late' }), 400, 'ENVELOPE_CANCELLED');
    const expired = await createEnvelope(t, { title: 'Expired', recipients: [person('rf-e')] });
    await execSql(t, sql`UPDATE envelopes SET expires_at = now() - interval '1 minute' WHERE id = ${expired.envelopeId}`);
    assertError(await reassign(expired.envelopeId, '1', { name: 'Late' }), 409, 'INVALID_STATE');
  });
});

describe('delegation by the recipient', () => {
  test('allowed: the delegate is invited with a new link and signs; the old link answers 410; event, audit and certificate say by the recipient', async () => {
    const alice = person('dl-alice');
    const gus = person('dl-gus');
    const env = await createEnvelope(t, { title: 'Delegated', recipients: [alice], allowDelegation: true });
    await drain(t);
    const oldToken = recipientToken(env, alice.email);
    assert.equal((await session(t, oldToken)).json().delegation.allowed, true);
    const res = await delegate(oldToken, { name: gus.name, email: gus.email, reason: 'Gus handles contracts' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { delegated: true, to: { name: gus.name, email: gus.email }, invitationSent: true });
    assertError(await session(t, oldToken), 410, 'SIGNING_LINK_HANDED_OVER');
    assertError(await delegate(oldToken, { name: 'Again', email: person('dl-again').email }), 410, 'SIGNING_LINK_HANDED_OVER');

    await drain(t);
    const [invitation] = mailsTo(gus.email);
    assert.match(invitation?.text ?? '', new RegExp(`${alice.name} \\(${alice.email.replace(/[.]/g, '\\.')}\\) was asked to handle this document`));
    const [newLink] = linksIn(invitation?.text);
    const after = await getEnvelope(t, env.envelopeId);
    assert.equal(after.recipients[0].signingUrl, newLink);
    const ev = after.events!.find((e) => e.eventType === 'RECIPIENT_DELEGATED') as { details: unknown } | undefined;
    assert.deepEqual(ev?.details, { from: { name: alice.name, email: alice.email }, to: { name: gus.name, email: gus.email }, by: 'recipient', reason: 'Gus handles contracts' });

    await signAs(t, tokenOf(newLink));
    await drain(t);
    const text = await certificateOf(env.envelopeId);
    assert.match(text, /Delegated by the recipient/);
    assert.match(text, /Gus handles contracts/);
  });

  test('refused: not allowed, to an address on the envelope or one\'s own, after acting, malformed input, beyond three hand-overs', async () => {
    const alice = person('dr-alice');
    const bob = person('dr-bob');
    const closed = await createEnvelope(t, { title: 'No delegation', recipients: [alice] });
    assert.equal((await session(t, recipientToken(closed, alice.email))).json().delegation.allowed, false);
    assertError(await delegate(recipientToken(closed, alice.email), { name: 'X', email: person('dr-x').email }), 403, 'DELEGATION_NOT_ALLOWED');

    const env = await createEnvelope(t, { title: 'Chain', recipients: [alice, bob], allowDelegation: true });
    const token = recipientToken(env, alice.email);
    assertError(await delegate(token, { name: 'Bob again', email: bob.email }), 409, 'RECIPIENT_EMAIL_TAKEN');
    assertError(await delegate(token, { name: 'Me', email: alice.email.toUpperCase() }), 409, 'RECIPIENT_EMAIL_TAKEN');
    assertError(await delegate(token, { name: '', email: person('dr-y').email }), 400, 'VALIDATION_ERROR');
    assertError(await delegate(token, { name: 'Y', email: 'nope' }), 400, 'VALIDATION_ERROR');
    assertError(await delegate(token, { name: 'Y', email: person('dr-y').email, reason: 'r'.repeat(501) }), 400, 'VALIDATION_ERROR');
    assertError(await delegate('A'.repeat(43), { name: 'Y', email: person('dr-y').email }), 404, 'SIGNING_LINK_INVALID');

    await signAs(t, recipientToken(env, bob.email));
    assertError(await delegate(recipientToken(env, bob.email), { name: 'Late', email: person('dr-late').email }), 409, 'ALREADY_ACTED');

    let current = token;
    for (let i = 1; i <= 3; i++) {
      const hop = person(`dr-hop${i}`);
      assert.equal((await delegate(current, { name: hop.name, email: hop.email })).statusCode, 200);
      current = recipientToken(await getEnvelope(t, env.envelopeId), hop.email);
    }
    assert.equal((await session(t, current)).json().delegation.allowed, true);
    assertError(await delegate(current, { name: 'Fourth', email: person('dr-hop4').email }), 409, 'HANDOVER_LIMIT_REACHED');
  });

  test('with the documenso engine allowDelegation it is refused at create, and so is reassignment', async () => {
    const standin = await (await import('./fixtures/documenso-standin.js')).startDocumensoStandin();
    const d = await createTestApp({ env: { SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: standin.url, DOCUMENSO_API_KEY: standin.apiKey, DOCUMENSO_WEBHOOK_SECRET: 'documenso-secret' } });
    try {
      const who = person('remote');
      const refused = await postMultipart(d, envelopeBody([await samplePdf()], { recipients: [who], fields: [sigField(who.email)], allowDelegation: true }), { key: newKey() });
      assertError(refused, 400, 'NOT_SUPPORTED_BY_ENGINE');
      const env = await createEnvelope(d, { title: 'Remote', recipients: [who] });
      assertError(await d.app.inject({ method: 'PATCH', url: `/v1/envelopes/${env.envelopeId}/recipients/1`, headers: bearer(d.customer.apiKey), payload: { name: 'New' } }), 400, 'NOT_SUPPORTED_BY_ENGINE');
    } finally {
      await d.close();
      await standin.close();
    }
  });
});
