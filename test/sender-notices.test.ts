/**
 * Issue 34, item 8: the sender hears how each envelope ended. Completed (the sealed PDF attached, or
 * linked over the limit), declined (who and why) and expired notices reach the account's notification
 * address; none when the account opted out; one per envelope however often the sync runs; a test
 * envelope's notice goes to the outbox only, as its invitations do.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { ParsedMail } from 'mailparser';
import { simpleParser } from 'mailparser';
import { SENDER_NOTICE_JOB, senderNoticeJob, type TSenderNotice } from '../src/modules/envelopes/sender-notices.js';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { capturingEmail } from './fixtures/dashboard.js';
import { createEnvelope, drain, execSql, inTx, jobsOfType, outbox, person, recipientToken, rejectAs, signAs, toOf, uniq } from './fixtures/envelopes.js';
import type { EmailMessage } from '../src/providers/email/index.js';

const SHOTS = '/tmp/shots-h-settings';
let t: TestApp;
const live = capturingEmail();

before(async () => {
  t = await createTestApp({ overrides: { email: live } });
});
after(async () => {
  await t?.close();
});

/** A customer with its own notification address and display name. */
async function sender(settings: Record<string, unknown> = {}): Promise<{ c: TestCustomer; to: string }> {
  const c = await t.createCustomer(500);
  const to = uniq('notices');
  const res = await t.app.inject({
    method: 'PATCH',
    url: '/v1/account',
    headers: { ...bearer(c.apiKey), 'content-type': 'application/json' },
    payload: JSON.stringify({ displayName: 'Acme Legal', notificationEmail: to, ...settings }),
  });
  assert.equal(res.statusCode, 200, res.body);
  return { c, to };
}

/** The live messages sent to `to`, parsed as a mail client would read them. */
const liveTo = (to: string): Promise<ParsedMail[]> => Promise.all(live.sent.filter((m) => m.to === to).map(parse));

async function parse(m: EmailMessage): Promise<ParsedMail> {
  // Rebuilt as MIME by nodemailer's own composer, so the test reads what a mailbox would.
  const { default: MailComposer } = await import('nodemailer/lib/mail-composer/index.js');
  const raw = await new MailComposer({ from: 'signet@example.com', to: m.to, subject: m.subject, text: m.text, html: m.html, attachments: (m.attachments ?? []).map((a) => ({ filename: a.filename, content: Buffer.from(a.content), contentType: a.contentType })), messageId: m.messageId }).compile().build();
  return simpleParser(raw);
}

function keepHtml(name: string, html: string | false | undefined): void {
  mkdirSync(SHOTS, { recursive: true });
  writeFileSync(`${SHOTS}/${name}.html`, html || '');
}

describe('sender notices', () => {
  test('completed: one email at the notification address with the sealed PDF attached', async () => {
    const { c, to } = await sender();
    const s = person('signer');
    const env = await createEnvelope(t, { title: 'Master services agreement', recipients: [s] }, { apiKey: c.apiKey });
    await drain(t); // a remote engine distributes in a job
    await signAs(t, recipientToken(env, s.email));
    await drain(t);
    const mails = await liveTo(to);
    assert.equal(mails.length, 1);
    const [mail] = mails;
    assert.equal(mail.subject, 'Completed: Master services agreement');
    assert.match(mail.text ?? '', /Hello Acme Legal,/);
    assert.match(mail.text ?? '', /Everyone has signed “Master services agreement”\./);
    assert.match(mail.text ?? '', new RegExp(`/dashboard/envelopes/${env.envelopeId}`));
    assert.match(mail.text ?? '', /\/dashboard\/settings/);
    assert.ok((mail.text ?? '').includes(s.email));
    assert.match(String(mail.html), /Everyone has signed/);
    assert.equal(mail.attachments.length, 1);
    assert.equal(mail.attachments[0].contentType, 'application/pdf');
    assert.equal(mail.attachments[0].filename, 'Master_services_agreement-signed.pdf');
    assert.equal(mail.attachments[0].content.subarray(0, 5).toString(), '%PDF-');
    // The file attached is the one the API serves.
    const served = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(c.apiKey) });
    assert.equal(served.statusCode, 200);
    assert.ok(Buffer.compare(served.rawPayload, mail.attachments[0].content) === 0);
    keepHtml('sender-completed', mail.html);

    // The sync again, a seal job again, the expiry sweep: the envelope ended once, so one notice.
    const { envelopes } = t.container;
    await execSql(t, sql`UPDATE envelopes SET expires_at = now() - interval '1 minute' WHERE id = ${env.envelopeId}`);
    await inTx(t, (tx) => envelopes.expireDue(tx));
    await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/status`, headers: bearer(c.apiKey) });
    await drain(t);
    assert.equal((await liveTo(to)).length, 1);
    assert.equal((await jobsOfType(t, SENDER_NOTICE_JOB)).filter((j) => (j.payload as TSenderNotice).envelopeId === env.envelopeId).length, 1);
  });

  test('declined: who declined and the reason they gave', async () => {
    const { c, to } = await sender();
    const a = person('ada');
    const b = person('bob');
    const env = await createEnvelope(t, { title: 'NDA <2026>', recipients: [a, b] }, { apiKey: c.apiKey });
    await drain(t); // a remote engine distributes in a job
    await rejectAs(t, recipientToken(env, b.email), 'The fee in clause 4 is wrong.\nPlease fix it.');
    await drain(t);
    const mails = await liveTo(to);
    assert.equal(mails.length, 1);
    const [mail] = mails;
    assert.equal(mail.subject, `${b.name} declined: NDA <2026>`);
    assert.ok((mail.text ?? '').includes(`${b.name} (${b.email}) declined “NDA <2026>”`));
    assert.match(mail.text ?? '', /> The fee in clause 4 is wrong\.\n> Please fix it\./);
    assert.ok(String(mail.html).includes('NDA &lt;2026&gt;'));
    assert.ok(String(mail.html).includes('The fee in clause 4 is wrong.<br>Please fix it.'));
    assert.equal(mail.attachments.length, 0);
    keepHtml('sender-declined', mail.html);
  });

  test('expired: who had still to act; the sweep run twice sends one', async () => {
    const { c, to } = await sender();
    const a = person('ada');
    const env = await createEnvelope(t, { title: 'Lease renewal', recipients: [a] }, { apiKey: c.apiKey });
    await drain(t); // a remote engine distributes in a job
    await execSql(t, sql`UPDATE envelopes SET expires_at = now() - interval '1 minute' WHERE id = ${env.envelopeId}`);
    await inTx(t, (tx) => t.container.envelopes.expireDue(tx));
    await drain(t);
    await inTx(t, (tx) => t.container.envelopes.expireDue(tx));
    await drain(t);
    const mails = await liveTo(to);
    assert.equal(mails.length, 1);
    assert.equal(mails[0].subject, 'Expired: Lease renewal');
    assert.match(mails[0].text ?? '', /expired before everyone signed/);
    assert.ok((mails[0].text ?? '').includes(`Still to act: ${a.name} <${a.email}>`));
    keepHtml('sender-expired', mails[0].html);
  });

  test('no notice when the account opted out; the account email when no notification address is set', async () => {
    const { c, to } = await sender({ senderNotifications: false });
    const s = person('signer');
    const env = await createEnvelope(t, { title: 'Quiet', recipients: [s] }, { apiKey: c.apiKey });
    await drain(t); // a remote engine distributes in a job
    await rejectAs(t, recipientToken(env, s.email), 'no');
    await drain(t);
    assert.equal((await liveTo(to)).length, 0);
    assert.equal((await jobsOfType(t, SENDER_NOTICE_JOB)).filter((j) => (j.payload as TSenderNotice).envelopeId === env.envelopeId).length, 0);

    const back = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(c.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ senderNotifications: true, notificationEmail: null }) });
    const email = back.json().email as string;
    const env2 = await createEnvelope(t, { title: 'Loud', recipients: [s] }, { apiKey: c.apiKey });
    await drain(t); // a remote engine distributes in a job
    await rejectAs(t, recipientToken(env2, s.email), 'no');
    await drain(t);
    assert.equal((await liveTo(email)).filter((m) => m.subject === `${s.name} declined: Loud`).length, 1);
  });

  test('a test envelope\'s notice goes to the outbox only, marked as a test', async () => {
    const { c, to } = await sender();
    const s = person('signer');
    const env = await createEnvelope(t, { title: 'Sandbox deal', recipients: [s] }, { apiKey: c.testApiKey });
    await drain(t); // a remote engine distributes in a job
    await rejectAs(t, recipientToken(env, s.email), 'just testing');
    await drain(t);
    assert.equal((await liveTo(to)).length, 0);
    const inOutbox = (await outbox(t)).filter((m) => toOf(m).includes(to));
    assert.equal(inOutbox.length, 1);
    assert.equal(inOutbox[0].subject, `[TEST] ${s.name} declined: Sandbox deal`);
    assert.match(inOutbox[0].text ?? '', /\?mode=test/);
  });

  test('a sealed PDF over the attachment limit is linked (the dashboard download), not attached', async () => {
    const { c, to } = await sender();
    const s = person('signer');
    const env = await createEnvelope(t, { title: 'Big file', recipients: [s] }, { apiKey: c.apiKey });
    await drain(t); // a remote engine distributes in a job
    await signAs(t, recipientToken(env, s.email));
    await drain(t);
    const [job] = (await jobsOfType(t, SENDER_NOTICE_JOB)).filter((j) => (j.payload as TSenderNotice).envelopeId === env.envelopeId);
    // The same job, run with a limit the sealed PDF is over: what a large document gets.
    const small = capturingEmail();
    // The engine's sealed PDF, as the download route serves it (the job reads it through the engine).
    const sealed = (await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(c.apiKey) })).rawPayload;
    const def = senderNoticeJob({ db: t.container.db, engine: { signedPdf: async () => sealed }, email: small, outbox: small, attachMaxBytes: 1000 });
    await def.handle(def.payload.parse(job.payload), { jobId: 0, attempt: 1, maxAttempts: 1, workerId: 'test' });
    assert.equal(small.sent.length, 1);
    const [mail] = await Promise.all(small.sent.map(parse));
    assert.equal(mail.to && !Array.isArray(mail.to) ? mail.to.text : '', to);
    assert.equal(mail.attachments.length, 0);
    assert.match(mail.text ?? '', /too large to attach/);
    assert.ok((mail.text ?? '').includes(`/dashboard/envelopes/${env.envelopeId}/download`));
  });
});
