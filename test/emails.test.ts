// test-lane: once (rendering and sending the emails; the jobs behind them run on both stores in jobs and signing-flow)
/**
 * The emails: every template rendered once (both parts, the link in both, values escaped in HTML, test
 * sends marked), then an invitation and a completion notice through a real SMTP server, and a job
 * queued before HTML mail existed still sending.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SEND_EMAIL_JOB } from '../src/engine/local/send-email-job.js';
import { enqueue } from '../src/jobs/queue.js';
import { escapeHtml, formatDeadline, invitationEmail, reminderEmail } from '../src/providers/email/templates/index.js';
import { EXPIRES_AT, LINKED, REALISTIC, sampleEmails, type EmailKind } from './fixtures/emails.js';
import { createEnvelope, drain, signAs, startAppWithSmtp, stopAppWithSmtp, toOf, tokenOf, uniq } from './fixtures/envelopes.js';
import type { TestSmtpServer } from './fixtures/smtp.js';
import type { TestApp } from './harness.js';

const HOSTILE = {
  title: '<b>x</b> & "y"',
  sender: '<i>Evil</i> & Co',
  message: '<script>alert(1)</script>\nsecond line',
  recipient: 'Zoë <z@x>',
  link: 'https://signet.test/sign/abc?x=1&y="2"',
  reason: '<img src=x onerror=alert(1)>',
};

describe('email templates', () => {
  const realistic = sampleEmails(REALISTIC);
  const kinds = Object.keys(realistic) as EmailKind[];

  test('every email has a subject, a text part and an HTML part; linked ones carry the link in both', () => {
    for (const kind of kinds) {
      const mail = realistic[kind];
      assert.ok(mail.subject.length > 0 && !/[\r\n]/.test(mail.subject), kind);
      assert.ok(mail.text.trim().length > 0, kind);
      assert.match(mail.html, /^<!doctype html>\n<html lang="en"/, kind);
      if (!LINKED.includes(kind)) continue;
      assert.ok(mail.text.includes(REALISTIC.link), `${kind}: the link in the text part`);
      assert.ok(mail.html.includes(`<a href="${REALISTIC.link}"`), `${kind}: the link in the HTML part`);
    }
  });

  test('the HTML uses inline styles only, loads nothing and links only where the message says', () => {
    for (const kind of kinds) {
      const { html } = realistic[kind];
      assert.doesNotMatch(html, /<style|<img|<script|<link\s|<iframe|url\(|@import/i, kind);
      const hrefs = [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]);
      assert.deepEqual([...new Set(hrefs)], LINKED.includes(kind) ? [REALISTIC.link] : [], `${kind}: no link but the one it is about`);
      const srcs = [...html.matchAll(/\ssrc=/g)];
      assert.equal(srcs.length, 0, kind);
    }
  });

  test('values are escaped in HTML and kept as typed in the text part', () => {
    const hostile = sampleEmails(HOSTILE);
    for (const kind of kinds) {
      const { html, text } = hostile[kind];
      for (const raw of ['<b>x</b>', '<i>Evil</i>', '<script>', '<img', '<z@x>', 'y="2"']) assert.ok(!html.includes(raw), `${kind}: ${raw} unescaped in HTML`);
      if (kind !== 'code' && kind !== 'sign-in') {
        assert.ok(html.includes('&lt;b&gt;x&lt;/b&gt; &amp; &quot;y&quot;'), `${kind}: the escaped title`);
        assert.ok(text.includes(HOSTILE.title), `${kind}: the title as typed in text`);
      }
      if (LINKED.includes(kind)) assert.ok(html.includes(`href="${escapeHtml(HOSTILE.link)}"`) && text.includes(HOSTILE.link), kind);
    }
    assert.ok(hostile.invitation.html.includes('&lt;script&gt;alert(1)&lt;/script&gt;<br>second line'), 'the message, escaped, its line break kept');
    assert.ok(hostile.invitation.text.includes('> <script>alert(1)</script>\n> second line'), 'the message quoted in text');
    assert.ok(hostile.declined.html.includes('&lt;img src=x onerror=alert(1)&gt;'));
  });

  test('the invitation names the sender, the title, the message, one button for the role and the deadline', () => {
    const mail = realistic.invitation;
    assert.equal(mail.subject, `Please sign “${REALISTIC.title}”`);
    assert.ok(mail.text.startsWith(`Hello ${REALISTIC.recipient},\n\nAcme Ltd asks you to review and sign “${REALISTIC.title}”.`), mail.text);
    assert.ok(mail.text.includes('Message from Acme Ltd:\n> Hi Alice,'));
    assert.ok(mail.text.includes('Sign by: 14 March 2026, 14:30 UTC'), mail.text);
    assert.ok(mail.html.includes('14 March 2026, 14:30 UTC'));
    assert.equal(formatDeadline(EXPIRES_AT), '14 March 2026, 14:30 UTC');
    assert.equal(mail.html.match(/<a href=[^>]*>Review and sign<\/a>/g)?.length, 1, 'one button');
    assert.ok(realistic['invitation-approve'].html.includes('>Review and approve</a>'));
    assert.equal(realistic['invitation-approve'].subject, `Please approve “${REALISTIC.title}”`);
    assert.ok(realistic['invitation-view'].html.includes('>View document</a>'));
    assert.equal(realistic['invitation-view'].subject, `Please view “${REALISTIC.title}”`);
    assert.ok(mail.html.includes('Sent by Signet on behalf of Acme Ltd.'), 'the footer');

    // The sender's own subject wins; a document from before senders were recorded reads without one.
    const env = { title: 'NDA', senderName: null, subject: 'Our NDA, please', expiresAt: EXPIRES_AT, test: false };
    assert.equal(invitationEmail(env, { name: 'A', email: 'a@x' }, REALISTIC.link, 'sign').subject, 'Our NDA, please');
    assert.match(invitationEmail({ ...env, subject: undefined }, { name: 'A', email: 'a@x' }, REALISTIC.link, 'sign').text, /You are asked to review and sign “NDA”\./);
    assert.equal(reminderEmail({ ...env, subject: undefined }, { name: 'A', email: 'a@x' }, REALISTIC.link, 'approve').subject, 'Reminder: please approve “NDA”');
    // The sender's manual resend speaks the recipient's language, a viewer's included.
    const de = reminderEmail({ ...env, subject: undefined }, { name: 'A', email: 'a@x', locale: 'de' }, REALISTIC.link, 'view');
    assert.equal(de.subject, 'Erinnerung: Bitte öffnen Sie “NDA”');
    assert.match(de.text, /Dokument ansehen/);
    assert.equal(reminderEmail({ ...env, subject: undefined }, { name: 'A', email: 'a@x' }, REALISTIC.link, 'view').subject, 'Reminder: please open “NDA”');
  });

  test('the decline notice says who declined and why; completion, cancel, code and sign-in say what happened', () => {
    assert.equal(realistic.declined.subject, `Declined: “${REALISTIC.title}”`);
    assert.ok(realistic.declined.text.includes('Bob Stone (bob@example.com) declined to sign'));
    assert.ok(realistic.declined.text.includes(`Reason given by Bob Stone:\n> ${REALISTIC.reason}`));
    assert.ok(realistic.declined.html.includes(escapeHtml(REALISTIC.reason)));
    assert.match(realistic.completed.text, /Everyone has signed .* The signed PDF is attached/);
    assert.match(realistic.cancelled.text, /The request from Acme Ltd to act on .* was cancelled\./);
    assert.equal(realistic.code.subject, 'Your verification code');
    assert.match(realistic.code.text, /^Hello Alice Martin,\n\nYour verification code is 042917\n/);
    assert.ok(realistic.code.html.includes('>042917</p>'));
    // The sign-in email keeps its wording.
    assert.equal(realistic['sign-in'].subject, 'Your Signet sign-in link');
    assert.ok(
      realistic['sign-in'].text.startsWith(
        `Hello,\n\nHere is your link to sign in to the Signet dashboard:\n\n${REALISTIC.link}\n\nIt works once and expires in 15 minutes. If this is your first sign-in, it also creates your account.\n\nIf you did not ask to sign in, ignore this email: nothing happens without the link.\n\n— Signet\n`,
      ),
      realistic['sign-in'].text,
    );
  });

  test('a test send says TEST in the subject and at the top of both parts; a live one does not', () => {
    const testMail = realistic['invitation-test'];
    assert.ok(testMail.subject.startsWith('[TEST] Please sign'), testMail.subject);
    assert.ok(testMail.text.startsWith('[TEST] This is a test send.'), testMail.text);
    assert.ok(testMail.html.includes('<strong style="letter-spacing:1px;">TEST</strong>'));
    for (const kind of kinds.filter((k) => k !== 'invitation-test')) assert.ok(!/\bTEST\b/.test(realistic[kind].subject + realistic[kind].text + realistic[kind].html), kind);
  });

  test('subjects stay one short line whatever the title', () => {
    const title = `${'Very long agreement title '.repeat(20)}\nwith a line break`;
    const mail = invitationEmail({ title, senderName: 'A', expiresAt: EXPIRES_AT, test: false }, { name: 'B', email: 'b@x' }, REALISTIC.link, 'sign');
    assert.ok(mail.subject.length <= 100, mail.subject);
    assert.doesNotMatch(mail.subject, /[\r\n]/);
    assert.ok(mail.text.includes(title.split('\n')[0]), 'the body keeps the whole title');
  });
});

describe('emails through a real SMTP server', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  before(async () => ({ t, smtp } = await startAppWithSmtp()));
  after(() => stopAppWithSmtp(t, smtp));

  test('the invitation arrives with text and HTML parts carrying the link, the sender and the deadline; completion attaches the sealed PDF', async () => {
    const alice = { email: uniq('alice'), name: 'Alice Martin', role: 'SIGNER' };
    const env = await createEnvelope(t, { title: HOSTILE.title, recipients: [alice], meta: { message: 'Please sign by Friday.' } });
    await drain(t);
    const link = env.recipients[0].signingUrl;
    const mail = await smtp.waitFor((m) => toOf(m).includes(alice.email) && /^Please sign/.test(m.subject ?? ''));
    assert.equal(mail.subject, `Please sign “${HOSTILE.title}”`);
    assert.ok(mail.text?.includes(link), mail.text);
    assert.ok(typeof mail.html === 'string' && mail.html.includes(`<a href="${link}"`), 'the HTML part links to the signing page');
    // The sender is the account's name (the harness's customer); the deadline is the envelope's.
    assert.ok(mail.text?.includes('Test Customer asks you to review and sign'), mail.text);
    assert.ok(mail.text?.includes(`Sign by: ${formatDeadline(new Date(env.expiresAt as string))}`), mail.text);
    assert.ok(mail.html.includes('&lt;b&gt;x&lt;/b&gt; &amp; &quot;y&quot;') && !mail.html.includes('<b>x</b>'));
    assert.ok(mail.text?.includes('> Please sign by Friday.'));

    await signAs(t, tokenOf(link));
    await drain(t, 120_000);
    const done = await smtp.waitFor((m) => toOf(m).includes(alice.email) && /^Completed/.test(m.subject ?? ''), 10_000);
    assert.ok(done.text?.includes('The signed PDF is attached'));
    assert.ok(typeof done.html === 'string' && done.html.includes('Everyone has signed'));
    assert.deepEqual(done.attachments.map((a) => a.contentType), ['application/pdf']);
    assert.equal(Buffer.from(done.attachments[0].content).subarray(0, 5).toString(), '%PDF-');
  });

  test('an email job queued before HTML mail (text only) still sends, as text', async () => {
    const to = uniq('old-job');
    await t.container.db.transaction((tx) => enqueue(tx, { type: SEND_EMAIL_JOB, payload: { to, subject: 'Please sign the old way', text: 'Open the document: https://x.test/sign/old', testSend: false } }));
    await drain(t);
    const mail = await smtp.waitFor((m) => toOf(m).includes(to));
    assert.equal(mail.text?.trim(), 'Open the document: https://x.test/sign/old');
    assert.equal(mail.html, false);
  });
});
