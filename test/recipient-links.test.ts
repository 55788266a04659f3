/**
 * POST /v1/envelopes/{id}/recipients/{recipient}/link: the sender revokes one recipient's signing link
 * and issues a new one, emailed to them (read here from a real SMTP server). The common route checks
 * (auth, another customer's envelope, the Idempotency-Key) are in test/common-routes.test.ts.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { and, asc, eq, sql } from 'drizzle-orm';
import { auditLog, engineEvents } from '../src/db/schema/index.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import type { TestSmtpServer } from './fixtures/smtp.js';
import {
  assertError,
  createEnvelope,
  drain,
  type Envelope,
  execSql,
  getEnvelope,
  newKey,
  person,
  recipientToken,
  rejectAs,
  session,
  signAs,
  startAppWithSmtp,
  stopAppWithSmtp,
  tokenOf,
  toOf,
} from './fixtures/envelopes.js';

let smtp: TestSmtpServer;
let t: TestApp;
// This file is about the built-in engine's links, whatever engine a suite run picks (the documenso one is below).
before(async () => ({ smtp, t } = await startAppWithSmtp({ SIGNING_ENGINE: 'local' })));
after(() => stopAppWithSmtp(t, smtp));

const reissue = (envelopeId: string, recipient: string, headers: Record<string, string> = {}, apiKey = t.customer.apiKey) =>
  t.app.inject({ method: 'POST', url: `/v1/envelopes/${envelopeId}/recipients/${encodeURIComponent(recipient)}/link`, headers: { ...bearer(apiKey), ...headers } });

/** The mails to `email` the SMTP server has received so far. */
const mailsTo = (email: string) => smtp.messages.filter((m) => toOf(m).includes(email.toLowerCase()));

/** The links to a signing page a mail carries. */
const linksIn = (text: string | undefined) => [...new Set((text ?? '').match(/https?:\/\/\S+\/sign\/[A-Za-z0-9_-]{43}/g) ?? [])];

describe('reissuing a signing link', () => {
  test('the old link stops, the new one opens and signs; the recipient is emailed a new invitation; audit row and certificate event', async () => {
    const alice = person('link-alice');
    const bob = person('link-bob');
    const env = await createEnvelope(t, { title: 'Leaked link', recipients: [alice, bob] });
    await drain(t);
    const oldAlice = recipientToken(env, alice.email);
    const bobToken = recipientToken(env, bob.email);
    assert.equal(mailsTo(alice.email).length, 1, 'the first invitation');
    assert.deepEqual(linksIn(mailsTo(alice.email)[0].text), [env.recipients[0].signingUrl]);

    const res = await reissue(env.envelopeId, '1');
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.envelopeId, env.envelopeId);
    assert.deepEqual([body.recipient.name, body.recipient.email, body.recipient.role, body.invitationSent], [alice.name, alice.email, 'SIGNER', true]);
    const newAlice = tokenOf(body.recipient.signingUrl);
    assert.notEqual(newAlice, oldAlice);

    assertError(await session(t, oldAlice), 404, 'SIGNING_LINK_INVALID');
    assert.equal((await session(t, newAlice)).statusCode, 200);
    assert.equal((await session(t, bobToken)).statusCode, 200, 'the other recipient is untouched');
    assert.equal(recipientToken(await getEnvelope(t, env.envelopeId), alice.email), newAlice, 'reads show the new link');

    await drain(t);
    const mails = mailsTo(alice.email);
    assert.equal(mails.length, 2, 'a second invitation');
    assert.deepEqual(linksIn(mails[1].text), [body.recipient.signingUrl]);
    assert.match(mails[1].subject ?? '', /Leaked link/);
    assert.equal(mailsTo(bob.email).length, 1, 'nothing more to the other recipient');

    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, env.envelopeId), eq(auditLog.action, 'envelope.link.reissue')));
    assert.equal(audit.length, 1);
    assert.equal(audit[0].customerId, t.customer.id);
    assert.deepEqual([audit[0].metadata?.recipient, audit[0].metadata?.invited], [alice.email, true]);

    await signAs(t, newAlice);
    await signAs(t, bobToken);
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');
    const events = await t.container.db.select().from(engineEvents).where(eq(engineEvents.documentId, env.engineEnvelopeId)).orderBy(asc(engineEvents.id));
    assert.deepEqual(
      events.filter((e) => e.event === 'LINK_REISSUED').map((e) => e.recipientId),
      [events.find((e) => e.event === 'SIGNED')!.recipientId],
      'the event names the recipient',
    );
    const sealed = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(sealed.statusCode, 200);
    assert.match(execFileSync('pdftotext', ['-', '-'], { input: sealed.rawPayload, encoding: 'utf8' }), /LINK_REISSUED/, 'the audit certificate shows it');
  });

  test('by email (any case); a recipient whose turn has not come is not emailed now, and their invitation carries the new link', async () => {
    const first = person('order-first', 'SIGNER', { signingOrder: 1 });
    const second = person('order-second', 'SIGNER', { signingOrder: 2 });
    const env = await createEnvelope(t, { title: 'In order', recipients: [first, second] });
    await drain(t);
    assert.equal(mailsTo(second.email).length, 0);

    const res = await reissue(env.envelopeId, second.email.toUpperCase());
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().invitationSent, false);
    await drain(t);
    assert.equal(mailsTo(second.email).length, 0, 'nothing before their turn');

    await signAs(t, recipientToken(env, first.email));
    await drain(t);
    const [invitation] = mailsTo(second.email);
    assert.deepEqual(linksIn(invitation?.text), [res.json().recipient.signingUrl]);
    assertError(await session(t, recipientToken(env, second.email)), 404, 'SIGNING_LINK_INVALID');

    // Someone who has acted has nothing left to protect: their link only shows what they did.
    assertError(await reissue(env.envelopeId, first.email), 409, 'ALREADY_ACTED');
  });

  test('a retry with the same Idempotency-Key answers the same link and revokes nothing more', async () => {
    const alice = person('idem-alice');
    const env = await createEnvelope(t, { title: 'Retried', recipients: [alice] });
    await drain(t);
    const key = newKey();
    const first = await reissue(env.envelopeId, '1', { 'idempotency-key': key });
    assert.equal(first.statusCode, 200, first.body);
    const replay = await reissue(env.envelopeId, '1', { 'idempotency-key': key });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body, first.body);
    assert.equal((await session(t, tokenOf(first.json().recipient.signingUrl))).statusCode, 200);
    await drain(t);
    assert.equal(mailsTo(alice.email).length, 2, 'one invitation at create, one for the new link');
  });

  test('refusals: an unknown recipient 404, a malformed one 400, an ended envelope by its state; nothing changes', async () => {
    const alice = person('refused-alice');
    const env = await createEnvelope(t, { title: 'Refused', recipients: [alice] });
    const token = recipientToken(env, alice.email);
    assertError(await reissue(env.envelopeId, '2'), 404, 'RECIPIENT_NOT_FOUND');
    assertError(await reissue(env.envelopeId, 'nobody@example.com'), 404, 'RECIPIENT_NOT_FOUND');
    assertError(await reissue(env.envelopeId, 'signer-one'), 400, 'VALIDATION_ERROR');
    assertError(await reissue('not-a-uuid', '1'), 404, 'ENVELOPE_NOT_FOUND');
    assert.equal((await session(t, token)).statusCode, 200, 'the link still works');

    const ended: [Envelope, (e: Envelope) => Promise<void>, number, string][] = [
      [env, async (e) => void (await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${e.envelopeId}`, headers: bearer(t.customer.apiKey) })), 400, 'ENVELOPE_CANCELLED'],
      [await createEnvelope(t, { title: 'Done', recipients: [person('done')] }), async (e) => (await signAs(t, tokenOf(e.recipients[0].signingUrl)), await drain(t)), 400, 'ENVELOPE_ALREADY_COMPLETE'],
      [await createEnvelope(t, { title: 'Declined', recipients: [person('declined')] }), (e) => rejectAs(t, tokenOf(e.recipients[0].signingUrl), 'no'), 409, 'INVALID_STATE'],
      [
        await createEnvelope(t, { title: 'Past its window', recipients: [person('late')] }),
        (e) => execSql(t, sql`UPDATE envelopes SET expires_at = now() - interval '1 minute' WHERE id = ${e.envelopeId}`),
        409,
        'INVALID_STATE',
      ],
    ];
    for (const [e, end, status, code] of ended) {
      await end(e);
      assertError(await reissue(e.envelopeId, '1'), status, code);
    }
  });
  test('409 ALREADY_ACTED for a recipient who signed; the other recipient\'s link can still be reissued', async () => {
    const alice = person('acted-alice');
    const bob = person('acted-bob');
    const env = await createEnvelope(t, { title: 'Half signed', recipients: [alice, bob] });
    await signAs(t, recipientToken(env, alice.email));
    assertError(await reissue(env.envelopeId, '1'), 409, 'ALREADY_ACTED');
    assert.equal((await reissue(env.envelopeId, bob.email)).statusCode, 200);
  });
});

describe('with the documenso engine', () => {
  test('400 NOT_SUPPORTED_BY_ENGINE: Documenso keeps the links itself', async () => {
    // Imported here: the stand-in brings Documenso's SDK, which no other test of this file needs.
    const standin = await (await import('./fixtures/documenso-standin.js')).startDocumensoStandin();
    const d = await createTestApp({ env: { SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: standin.url, DOCUMENSO_API_KEY: standin.apiKey, DOCUMENSO_WEBHOOK_SECRET: 'documenso-secret' } });
    try {
      const env = await createEnvelope(d, { title: 'Remote', recipients: [person('remote')] });
      const res = await d.app.inject({ method: 'POST', url: `/v1/envelopes/${env.envelopeId}/recipients/1/link`, headers: bearer(d.customer.apiKey) });
      assertError(res, 400, 'NOT_SUPPORTED_BY_ENGINE');
    } finally {
      await d.close();
      await standin.close();
    }
  });
});
