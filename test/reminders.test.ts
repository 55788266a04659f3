/**
 * Automatic reminders and expiry warnings (issue 37, item 1): the schedule per envelope and the
 * account's default, sent once however many ticks or workers race, never after an end or to someone
 * who acted or whose turn has not come, never for embedded delivery; in the recipient's language;
 * listed as events and delivered as the opt-in envelope.reminder_sent. Time moves by moving the rows'
 * timestamps back, never by waiting.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { reminderSettings } from '../src/modules/envelopes/envelope-account.js';
import { AppError } from '../src/errors.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import {
  assertError,
  createEnvelope,
  drain,
  type Envelope,
  envelopeBody,
  execSql,
  getEnvelope,
  inTx,
  person,
  postMultipart,
  recipientToken,
  rejectAs,
  samplePdf,
  sigField,
  signAs,
  toOf,
} from './fixtures/envelopes.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';
import { startSmtpServer, type TestSmtpServer } from './fixtures/smtp.js';

const onPostgres = Boolean(process.env.DATABASE_URL);
const json = { 'content-type': 'application/json' };
const SCHEDULE = { firstAfterDays: 2, everyDays: 3, max: 2 };

let smtp: TestSmtpServer;
let t: TestApp;
let receiver: Receiver;

before(async () => {
  smtp = await startSmtpServer();
  receiver = await startReceiver({ fallback: 200 });
  t = await createTestApp({ env: { SMTP_URL: smtp.url, WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
});
after(async () => {
  await t.close();
  await smtp.close();
  await receiver.close();
});

const mailsTo = (email: string) => smtp.messages.filter((m) => toOf(m).includes(email.toLowerCase()));
const remindersTo = (email: string) => mailsTo(email).filter((m) => !/^Please /.test(m.subject ?? ''));

/** One scheduler tick of the reminder task, then the mail it queued goes out. */
async function tick(): Promise<number> {
  const n = await inTx(t, (tx) => t.container.reminders.remindDue(tx));
  await drain(t);
  return n;
}

/** The envelope's invitations (and reminders) happened `days` earlier. */
const age = (env: Envelope, days: number) =>
  execSql(
    t,
    sql`UPDATE engine_recipients SET notified_at = notified_at - make_interval(days => ${days}), last_reminded_at = last_reminded_at - make_interval(days => ${days})
      WHERE document_id = ${env.engineEnvelopeId}`,
  );

async function sent(payload: Record<string, unknown> & { recipients: ReturnType<typeof person>[] }, apiKey = t.customer.apiKey): Promise<Envelope> {
  const env = await createEnvelope(t, { title: 'Lease', ...payload }, { apiKey });
  await drain(t);
  return env;
}

const eventsOf = async (env: Envelope) => (await getEnvelope(t, env.envelopeId)).events!.filter((e) => e.event === 'envelope.reminder_sent');

describe('automatic reminders', () => {
  test('due reminders go out once however many ticks race, every everyDays after the first, max in all, with the link and an event each', async () => {
    const s = person('due');
    const env = await sent({ recipients: [s], reminders: SCHEDULE });
    assert.equal(await tick(), 0, 'nothing before firstAfterDays');
    await age(env, 1);
    assert.equal(await tick(), 0, 'one day is not two');
    await age(env, 1);
    // Two ticks at once (on PostgreSQL two connections, as two nodes): one reminder.
    const raced = await Promise.all([inTx(t, (tx) => t.container.reminders.remindDue(tx)), inTx(t, (tx) => t.container.reminders.remindDue(tx))]);
    assert.equal(raced[0] + raced[1], 1, `raced: ${raced}`);
    await drain(t);
    assert.equal(await tick(), 0, 'claimed: a third tick finds nothing');
    const [reminder] = remindersTo(s.email);
    assert.equal(remindersTo(s.email).length, 1);
    assert.equal(reminder.subject, 'Reminder: please sign “Lease”');
    assert.ok(reminder.text!.includes(env.recipients[0].signingUrl), 'the signing link');
    assert.match(reminder.text!, /Sign by: .+\(UTC\)/, 'the deadline, the zone named');
    assert.match(String(reminder.html), /<html lang="en" dir="ltr">/);

    await age(env, 2);
    assert.equal(await tick(), 0, 'the next one is everyDays (3) after the first');
    await age(env, 1);
    assert.equal(await tick(), 1);
    await age(env, 30);
    assert.equal(await tick(), 0, 'max 2');
    assert.equal(remindersTo(s.email).length, 2);
    const events = await eventsOf(env);
    assert.deepEqual(events.map((e) => [e.eventType, e.recipientEmail]), [['RECIPIENT_REMINDED', s.email], ['RECIPIENT_REMINDED', s.email]]);
  });

  test('the claim itself is compare-and-set: the engine asked twice at once sends one', async () => {
    const s = person('cas');
    const env = await sent({ recipients: [s], reminders: SCHEDULE });
    await age(env, 5);
    const claims = await Promise.all([0, 1].map(() => inTx(t, (tx) => t.container.local.engine.sendDueReminders!(tx, env.engineEnvelopeId, { defaultLocale: null }))));
    assert.equal(claims.flat().length, 1, JSON.stringify(claims));
    const [row] = rowsOf<{ reminders_sent: number }>(await t.container.db.execute(sql`SELECT reminders_sent FROM engine_recipients WHERE document_id = ${env.engineEnvelopeId}`));
    assert.equal(Number(row.reminders_sent), 1);
  });

  test('none after signing, declining, cancelling or expiry; none for embedded delivery; none before one\'s turn', async () => {
    const [a, b, c, d, e] = ['signed', 'rejected', 'cancelled', 'expired', 'embedded'].map((tag) => person(tag));
    const signed = await sent({ recipients: [a], reminders: SCHEDULE });
    const rejected = await sent({ recipients: [b], reminders: SCHEDULE });
    const cancelled = await sent({ recipients: [c], reminders: SCHEDULE });
    const expired = await sent({ recipients: [d], reminders: SCHEDULE, expiryWarningDays: 1 });
    const embedded = await sent({ recipients: [e], reminders: SCHEDULE, expiryWarningDays: 1, delivery: 'embedded' });
    await signAs(t, recipientToken(signed, a.email));
    await rejectAs(t, recipientToken(rejected, b.email), 'no');
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${cancelled.envelopeId}`, headers: bearer(t.customer.apiKey) })).statusCode, 200);
    await execSql(t, sql`UPDATE envelopes SET expires_at = now() - interval '1 minute' WHERE id = ${expired.envelopeId}`);
    await inTx(t, (tx) => t.container.envelopes.expireDue(tx));
    // The embedded recipient as if someone had been notified: delivery alone keeps them from mail.
    await execSql(t, sql`UPDATE engine_recipients SET notified_at = now() WHERE document_id = ${embedded.engineEnvelopeId}`);
    await execSql(t, sql`UPDATE engine_documents SET expires_at = now() + interval '12 hours' WHERE id = ${embedded.engineEnvelopeId}`);
    await drain(t);
    for (const env of [signed, rejected, cancelled, expired, embedded]) await age(env, 20);
    assert.equal(await tick(), 0);
    for (const p of [a, b, c, d, e]) assert.equal(remindersTo(p.email).filter((m) => /Reminder|Expires/.test(m.subject ?? '')).length, 0, p.email);

    // In signing order, the second signer is reminded only once their turn came, counted from their invitation.
    const [first, second] = [person('first', 'SIGNER', { signingOrder: 1 }), person('second', 'SIGNER', { signingOrder: 2 })];
    const ordered = await sent({ recipients: [first, second], reminders: { firstAfterDays: 1, everyDays: 1, max: 1 } });
    await age(ordered, 3);
    assert.equal(await tick(), 1);
    assert.equal(remindersTo(first.email).length, 1);
    assert.equal(remindersTo(second.email).length, 0, 'not their turn yet');
    await signAs(t, recipientToken(ordered, first.email));
    await drain(t);
    assert.equal(await tick(), 0, 'just invited');
    await age(ordered, 1);
    assert.equal(await tick(), 1);
    assert.equal(remindersTo(second.email).length, 1);
  });

  test('the expiry warning: once, expiryWarningDays before the end, to whoever must still act', async () => {
    const s = person('warn');
    const env = await sent({ recipients: [s], expiryWarningDays: 3 });
    await age(env, 5);
    assert.equal(await tick(), 0, 'not yet within three days of the end');
    await execSql(t, sql`UPDATE engine_documents SET expires_at = now() + interval '2 days' - interval '1 hour' WHERE id = ${env.engineEnvelopeId}`);
    assert.equal(await tick(), 1);
    assert.equal(await tick(), 0, 'once');
    const [warning] = remindersTo(s.email);
    assert.equal(warning.subject, 'Expires in 2 days: “Lease”');
    assert.match(warning.text!, /This request expires in 2 days\./);
    assert.ok(warning.text!.includes(env.recipients[0].signingUrl));
    assert.deepEqual((await eventsOf(env)).map((e) => e.eventType), ['RECIPIENT_EXPIRY_WARNED']);
  });

  test("in the recipient's language and time zone, else the account's language", async () => {
    const [de, fr] = [person('de'), person('fr')];
    const env = await sent({ recipients: [de, fr], reminders: SCHEDULE });
    await execSql(t, sql`UPDATE engine_recipients SET locale = 'de', time_zone = 'Europe/Berlin' WHERE document_id = ${env.engineEnvelopeId} AND email = ${de.email}`);
    await execSql(t, sql`UPDATE customers SET default_locale = 'fr' WHERE id = ${t.customer.id}`);
    try {
      await age(env, 2);
      assert.equal(await tick(), 2);
    } finally {
      await execSql(t, sql`UPDATE customers SET default_locale = NULL WHERE id = ${t.customer.id}`);
    }
    const [german] = remindersTo(de.email);
    assert.equal(german.subject, 'Erinnerung: Bitte unterschreiben Sie “Lease”');
    assert.match(german.text!, /^Hallo Person de,/m);
    assert.match(german.text!, /Unterschreiben bis: .+ \((MEZ|MESZ|GMT\+1|GMT\+2|CET|CEST)\)/);
    assert.match(String(german.html), /<html lang="de" dir="ltr">/);
    assert.match(String(german.html), /Prüfen und unterschreiben/);
    const [french] = remindersTo(fr.email);
    assert.equal(french.subject, 'Rappel : merci de signer “Lease”');
    assert.match(french.text!, /\(UTC\)/, 'no known zone: UTC, named');
  });

  test('envelope.reminder_sent reaches a registration that names it, not one with "*"', async () => {
    const headers = { ...bearer(t.customer.apiKey), ...json };
    const named = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers, payload: JSON.stringify({ url: receiver.url('/named'), events: ['envelope.reminder_sent'] }) });
    const star = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers, payload: JSON.stringify({ url: receiver.url('/star'), events: ['*'] }) });
    assert.equal(named.statusCode, 201, named.body);
    assert.equal(star.statusCode, 201, star.body);
    try {
      const s = person('hook');
      const env = await sent({ recipients: [s], reminders: SCHEDULE });
      await age(env, 2);
      const before = receiver.requests.length;
      assert.equal(await tick(), 1);
      const got = receiver.requests.slice(before).map((r) => ({ path: r.path, event: r.headers['x-service-event'], body: JSON.parse(r.raw.toString('utf8')) }));
      assert.deepEqual(got.map((r) => [r.path, r.event]), [['/named', 'envelope.reminder_sent']], 'the "*" registration gets nothing new');
      assert.deepEqual(got[0].body.reminder, { kind: 'reminder', recipientEmail: s.email, recipientName: s.name });
      assert.equal(got[0].body.envelope.envelopeId, env.envelopeId);
      assert.ok(receiver.requests.some((r) => r.path === '/star' && r.headers['x-service-event'] === 'envelope.sent'), '"*" still gets SPEC\'s events');
    } finally {
      for (const w of [named, star]) await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${w.json().id}`, headers: bearer(t.customer.apiKey) });
    }
  });

  test("the account's default applies to envelopes that give none; null opts out; another account's default is not ours", async () => {
    const other = await t.createCustomer(1000);
    const patchOther = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(other.apiKey), ...json }, payload: JSON.stringify({ reminders: { firstAfterDays: 1, everyDays: 1, max: 5 } }) });
    assert.equal(patchOther.statusCode, 200, patchOther.body);
    const none = person('no-default');
    const plain = await sent({ recipients: [none] });
    await age(plain, 10);
    assert.equal(await tick(), 0, "another account's default is not applied to ours");

    const patch = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(t.customer.apiKey), ...json }, payload: JSON.stringify({ reminders: { firstAfterDays: 1, everyDays: 1, max: 1 }, expiryWarningDays: 2 }) });
    assert.equal(patch.statusCode, 200, patch.body);
    assert.deepEqual({ reminders: patch.json().reminders, expiryWarningDays: patch.json().expiryWarningDays }, { reminders: { firstAfterDays: 1, everyDays: 1, max: 1 }, expiryWarningDays: 2 });
    const got = (await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) })).json();
    assert.deepEqual(got.reminders, { firstAfterDays: 1, everyDays: 1, max: 1 });
    try {
      const [d, optedOut] = [person('default'), person('opted-out')];
      const byDefault = await sent({ recipients: [d] });
      const withNull = await sent({ recipients: [optedOut], reminders: null, expiryWarningDays: null });
      await age(byDefault, 1);
      await age(withNull, 1);
      assert.equal(await tick(), 1);
      assert.equal(remindersTo(d.email).length, 1);
      assert.equal(remindersTo(optedOut.email).length, 0);
    } finally {
      const reset = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(t.customer.apiKey), ...json }, payload: JSON.stringify({ reminders: null, expiryWarningDays: null }) });
      assert.equal(reset.json().reminders, null);
    }
  });

  test('bad input: out of range, wrong types, unknown keys', async () => {
    const s = person('bad');
    const bad = [
      { reminders: { firstAfterDays: 0, everyDays: 1, max: 1 } },
      { reminders: { firstAfterDays: 1, everyDays: 61, max: 1 } },
      { reminders: { firstAfterDays: 1, everyDays: 1, max: 11 } },
      { reminders: { firstAfterDays: '2', everyDays: 1, max: 1 } },
      { reminders: { firstAfterDays: 1.5, everyDays: 1, max: 1 } },
      { reminders: { firstAfterDays: 1, everyDays: 1 } },
      { reminders: { firstAfterDays: 1, everyDays: 1, max: 1, hourly: true } },
      { reminders: 'weekly' },
      { expiryWarningDays: 0 },
      { expiryWarningDays: 61 },
      { expiryWarningDays: '3' },
    ];
    for (const extra of bad) {
      const res = await postMultipart(t, envelopeBody([await samplePdf()], { recipients: [s], fields: [sigField(s.email)], ...extra }));
      const body = assertError(res, 400, 'VALIDATION_ERROR');
      assert.match(JSON.stringify(body.details), /reminders|expiryWarningDays/, JSON.stringify(extra));
    }
    for (const extra of [{ reminders: { firstAfterDays: 100, everyDays: 1, max: 1 } }, { reminders: [] }, { expiryWarningDays: -1 }, { expiryWarningDays: true }]) {
      const res = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(t.customer.apiKey), ...json }, payload: JSON.stringify(extra) });
      assertError(res, 400, 'VALIDATION_ERROR');
    }
  });

  test('an engine without automatic reminders (documenso) refuses them by name, and applies no default', { skip: onPostgres && 'opens no database: runs on PGlite' }, () => {
    const documenso = {};
    assert.throws(
      () => reminderSettings({ reminders: { firstAfterDays: 1, everyDays: 1, max: 1 } }, undefined, documenso),
      (err: unknown) => err instanceof AppError && err.code === 'NOT_SUPPORTED_BY_ENGINE' && /reminders/.test(err.message),
    );
    assert.throws(() => reminderSettings({ expiryWarningDays: 2 }, undefined, documenso), (err: unknown) => err instanceof AppError && /expiryWarningDays/.test(err.message));
    assert.deepEqual(reminderSettings({}, { name: null, consentText: null, reminderDefaults: SCHEDULE, expiryWarningDays: 2 }, documenso), { reminders: null, expiryWarningDays: null });
    assert.deepEqual(reminderSettings({ reminders: null }, undefined, documenso), { reminders: null, expiryWarningDays: null });
  });

  test('on PostgreSQL, two workers racing on separate connections send each reminder once', { skip: !onPostgres && 'needs concurrent connections' }, async () => {
    const people = [person('race-1'), person('race-2'), person('race-3')];
    const envs = [];
    for (const p of people) envs.push(await sent({ recipients: [p], reminders: SCHEDULE }));
    for (const env of envs) await age(env, 2);
    const counts = await Promise.all([0, 1, 2, 3].map(() => inTx(t, (tx) => t.container.reminders.remindDue(tx))));
    await drain(t);
    assert.equal(counts.reduce((a, b) => a + b, 0), 3);
    for (const p of people) assert.equal(remindersTo(p.email).length, 1, p.email);
  });
});
