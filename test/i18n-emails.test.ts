/**
 * Emails in the reader's language (issue 37, item 6): every email a recipient gets, in German and
 * Arabic, with no English catalogue text left in it; then through a real SMTP server, a German
 * account's envelope with an Arabic recipient (invitations, code, decline, completion with the sealed
 * PDF, and the sender's notice in the account's language).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { IntlMessageFormat } from 'intl-messageformat';
import { sql } from 'drizzle-orm';
import { allMessages } from '../src/i18n/catalogue.js';
import type { Locale } from '../src/i18n/locales.js';
import {
  cancelledEmail,
  completedEmail,
  declinedEmail,
  formatDeadline,
  invitationEmail,
  senderCompletedEmail,
  senderDeclinedEmail,
  senderExpiredEmail,
  verificationCodeEmail,
  type EnvelopeMail,
  type RenderedEmail,
} from '../src/providers/email/templates/index.js';
import { EXPIRES_AT, REALISTIC } from './fixtures/emails.js';
import { consent, createEnvelope, drain, rejectAs, signAs, startAppWithSmtp, stopAppWithSmtp, toOf, tokenOf, uniq } from './fixtures/envelopes.js';
import type { TestSmtpServer } from './fixtures/smtp.js';
import type { TestApp } from './harness.js';

/** Every email a recipient (or, for the sender's notices, the account) can get, in `locale`. */
function allEmails(locale: Locale, timeZone: string | null = null): Record<string, RenderedEmail> {
  const env: EnvelopeMail = { title: REALISTIC.title, senderName: REALISTIC.sender, message: REALISTIC.message, expiresAt: EXPIRES_AT, test: false };
  const bare: EnvelopeMail = { title: null, senderName: null, expiresAt: EXPIRES_AT, test: true };
  const who = { name: REALISTIC.recipient, email: 'alice@example.com', locale, timeZone };
  const by = { name: 'Bob Stone', email: 'bob@example.com', action: 'sign' as const };
  const account = { title: REALISTIC.title, accountName: 'Acme Ltd', envelopeUrl: 'https://signet.example.com/dashboard/envelopes/1', settingsUrl: 'https://signet.example.com/dashboard/settings', recipients: [{ name: 'Bob Stone', email: 'bob@example.com', role: 'SIGNER', status: 'NOT_SIGNED' }], test: false, locale };
  const at = new Date('2026-03-14T14:30:00Z');
  const mails: Record<string, RenderedEmail> = {};
  for (const [tag, e] of [['', env], ['bare-', bare]] as const) {
    for (const action of ['sign', 'approve', 'view'] as const) mails[`${tag}invitation-${action}`] = invitationEmail(e, who, REALISTIC.link, action);
    mails[`${tag}completed`] = completedEmail(e, who);
    mails[`${tag}declined`] = declinedEmail(e, who, by, REALISTIC.reason);
    mails[`${tag}declined-approve`] = declinedEmail(e, who, { ...by, action: 'approve' }, '');
    mails[`${tag}cancelled`] = cancelledEmail(e, who);
  }
  for (const forSigning of [true, false]) mails[`code-${forSigning}`] = verificationCodeEmail({ name: forSigning ? REALISTIC.recipient : null, code: '042917', forSigning, minutes: 10, test: !forSigning, locale });
  for (const title of [REALISTIC.title, null]) {
    const m = { ...account, title };
    mails[`sender-completed-${title}`] = senderCompletedEmail(m, { completedAt: at, attached: true });
    mails[`sender-completed-link-${title}`] = senderCompletedEmail(m, { completedAt: at, attached: false });
    mails[`sender-declined-${title}`] = senderDeclinedEmail(m, { by, reason: title ? REALISTIC.reason : null, declinedAt: at });
    mails[`sender-expired-${title}`] = senderExpiredEmail(m, { expiredAt: at });
  }
  return mails;
}

type Node = { type: number; value?: string; options?: Record<string, { value: Node[] }> };
/** The words of a message: its literal parts, nested select and plural branches included. */
function literalsOf(nodes: Node[], out: string[] = []): string[] {
  for (const n of nodes) {
    if (n.type === 0 && n.value) out.push(n.value);
    for (const option of Object.values(n.options ?? {})) literalsOf(option.value, out);
  }
  return out;
}

/** English sentences of the email catalogues long enough to be recognised, that the other locale does not share. */
function englishFragments(locale: Locale): string[] {
  const english = allMessages().get('en')!;
  const other = Object.values(allMessages().get(locale)!).join('\n');
  return Object.entries(english)
    .filter(([key]) => key.startsWith('email.') || key.startsWith('email-sender.'))
    .flatMap(([, text]) => literalsOf(new IntlMessageFormat(text, 'en').getAst() as unknown as Node[]))
    .map((s) => s.trim())
    .filter((s) => s.length >= 6 && !other.includes(s));
}

describe('emails in the reader’s language', () => {
  test('no English catalogue text is left in any German or Arabic email, subject, text or HTML', () => {
    for (const locale of ['de', 'ar'] as const) {
      const fragments = englishFragments(locale);
      assert.ok(fragments.length > 80, `${fragments.length} fragments`);
      // Words that are no catalogue's but were English in the templates before (a check on the check).
      fragments.push('Hello', 'Sign by', 'Please', 'If the button does not work', 'Untitled', 'Reason given by', 'Completed', 'Declined', 'Cancelled', 'Expired', 'minutes');
      for (const [kind, mail] of Object.entries(allEmails(locale))) {
        // The fixed values of the sample (title, names, message, reason) are English by design: taken out first.
        const all = [mail.subject, mail.text, mail.html].join('\n').split(REALISTIC.title).join('').split(REALISTIC.message.split('\n')[0]).join('').split(REALISTIC.reason).join('');
        const left = fragments.filter((f) => all.includes(f));
        assert.deepEqual(left, [], `${locale} ${kind}: English left`);
        assert.match(mail.html, new RegExp(`^<!doctype html>\\n<html lang="${locale}" dir="${locale === 'ar' ? 'rtl' : 'ltr'}">`), kind);
      }
    }
  });

  test('German reads as German: subject, greeting, deadline in the reader’s zone, plurals, quotes', () => {
    const de = allEmails('de', 'Europe/Berlin');
    assert.equal(de['invitation-sign'].subject, `Bitte unterschreiben Sie „${REALISTIC.title}“`);
    assert.match(de['invitation-sign'].text, /^Hallo Alice Martin,\n\nAcme Ltd bittet Sie, „Mutual NDA/);
    assert.ok(de['invitation-sign'].text.includes('Unterschreiben bis: 14. März 2026, 15:30 Europe/Berlin'), de['invitation-sign'].text);
    assert.ok(allEmails('de')['bare-invitation-view'].text.includes('Link gültig bis: 14. März 2026, 14:30 UTC'));
    assert.equal(de['bare-completed'].subject, '[TEST] Abgeschlossen: ein Dokument');
    assert.ok(de['code-true'].text.includes('innerhalb von 10 Minuten auf der Signaturseite ein'));
    assert.ok(allEmails('pl')['code-true'].text.includes('w ciągu 10 minut'));
    assert.equal(de[`sender-expired-null`].subject, 'Abgelaufen: Unbenanntes Dokument');
    assert.equal(formatDeadline(EXPIRES_AT), '14 March 2026, 14:30 UTC');
    assert.equal(formatDeadline(EXPIRES_AT, 'en', 'America/New_York'), '14 March 2026, 10:30 America/New_York');
    // A zone this runtime does not know falls back to UTC, named.
    assert.equal(formatDeadline(EXPIRES_AT, 'de', 'Mars/Olympus'), '14. März 2026, 14:30 UTC');
  });

  test('Arabic is right to left: the document, the quote bar and the gaps beside labels on the right', () => {
    const ar = allEmails('ar');
    const mail = ar['invitation-sign'];
    assert.match(mail.html, /<body dir="rtl"/);
    assert.match(mail.html, /border-right:4px solid/);
    assert.doesNotMatch(mail.html, /border-left:4px solid/);
    assert.match(mail.subject, /^يرجى توقيع «/);
    assert.ok(mail.text.includes('راجع ووقّع'));
    assert.doesNotMatch(allEmails('en')['invitation-sign'].html, /dir="rtl"|border-right:4px/);
  });
});

describe('emails in the reader’s language through a real SMTP server', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  before(async () => ({ t, smtp } = await startAppWithSmtp()));
  after(() => stopAppWithSmtp(t, smtp));

  const owner = uniq('owner');
  const auth = () => ({ authorization: `Bearer ${t.customer.apiKey}` });
  const setAccountLocale = async (locale: string | null) => {
    const res = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...auth(), 'content-type': 'application/json' }, payload: JSON.stringify({ defaultLocale: locale, notificationEmail: owner }) });
    assert.equal(res.statusCode, 200, res.body);
  };
  const mailTo = (to: string, subject: RegExp) =>
    smtp.waitFor((m) => toOf(m).includes(to) && subject.test(m.subject ?? ''), 15_000).catch((error: Error) => {
      throw new Error(`${error.message}: ${subject} to ${to}; got ${JSON.stringify(smtp.messages.map((m) => [toOf(m), m.subject]))}`);
    });

  test('a German account, an Arabic recipient: invitations, code, completion with the sealed PDF, and the sender’s notice each in its language', async () => {
    await setAccountLocale('de');
    const anna = { email: uniq('anna'), name: 'Anna Schmidt', role: 'SIGNER' };
    const omar = { email: uniq('omar'), name: 'عمر', role: 'SIGNER', locale: 'ar', verificationRequired: true };
    const env = await createEnvelope(t, { title: 'Rahmenvertrag', recipients: [anna, omar] });
    await drain(t);

    const de = await mailTo(anna.email, /^Bitte unterschreiben Sie „Rahmenvertrag“$/);
    assert.ok(de.text?.includes('Hallo Anna Schmidt,'), de.text);
    assert.ok(typeof de.html === 'string' && de.html.startsWith('<!doctype html>\n<html lang="de" dir="ltr">'));
    assert.ok(de.text?.includes(env.recipients[0].signingUrl));
    const ar = await mailTo(omar.email, /^يرجى توقيع «Rahmenvertrag»$/);
    assert.ok(typeof ar.html === 'string' && ar.html.startsWith('<!doctype html>\n<html lang="ar" dir="rtl">'));
    assert.ok(ar.text?.includes('مرحبًا عمر،'), ar.text);

    // Omar's code email is Arabic too (his own language beats the account's).
    const omarToken = tokenOf(env.recipients.find((r) => r.email === omar.email)!.signingUrl);
    const sent = await t.app.inject({ method: 'POST', url: `/sign/${omarToken}/verification/code`, headers: { 'content-type': 'application/json' }, payload: '{}' });
    assert.equal(sent.statusCode, 200, sent.body);
    await drain(t);
    const code = await mailTo(omar.email, /^رمز التحقق الخاص بك$/);
    const digits = /(\d{6})/.exec(code.text ?? '')?.[1];
    assert.ok(digits, code.text);
    assert.ok(code.text?.includes('خلال 10 دقائق'), code.text); // Arabic's "few" (3-10): دقائق
    const confirmed = await t.app.inject({ method: 'POST', url: `/sign/${omarToken}/verification/confirm`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ code: digits }) });
    assert.equal(confirmed.statusCode, 200, confirmed.body);

    await consent(t, omarToken, { timeZone: 'Asia/Dubai' });
    await signAs(t, omarToken);
    await signAs(t, tokenOf(env.recipients[0].signingUrl));
    await drain(t, 120_000);
    const doneDe = await mailTo(anna.email, /^Abgeschlossen: „Rahmenvertrag“$/);
    assert.ok(doneDe.text?.includes('Alle haben „Rahmenvertrag“ unterschrieben.'), doneDe.text);
    assert.deepEqual(doneDe.attachments.map((a) => a.contentType), ['application/pdf']);
    const doneAr = await mailTo(omar.email, /^اكتمل: «Rahmenvertrag»$/);
    assert.ok(doneAr.text?.includes('ملف PDF الموقّع مرفق'), doneAr.text);
    assert.equal(Buffer.from(doneAr.attachments[0].content).subarray(0, 5).toString(), '%PDF-');
    // The account hears it in its own language.
    const notice = await mailTo(owner, /^Abgeschlossen: Rahmenvertrag$/);
    assert.ok(notice.text?.includes('Hallo '), notice.text);
    assert.ok(typeof notice.html === 'string' && notice.html.includes('lang="de"'));
  });

  test('a decline and a cancel reach each recipient in their own language; without any locale, English as before', async () => {
    await setAccountLocale(null);
    const pia = { email: uniq('pia'), name: 'Pia', role: 'SIGNER', locale: 'pl' };
    const li = { email: uniq('li'), name: '李雷', role: 'SIGNER', locale: 'zh-CN' };
    const ed = { email: uniq('ed'), name: 'Ed', role: 'SIGNER' };
    const env = await createEnvelope(t, { title: 'Umowa', recipients: [pia, li, ed] });
    await drain(t);
    assert.ok((await mailTo(ed.email, /^Please sign “Umowa”$/)).text?.includes('Hello Ed,'));
    await mailTo(pia.email, /^Prosimy o podpisanie: „Umowa”$/);
    await rejectAs(t, tokenOf(env.recipients[0].signingUrl), 'Zła kwota');
    await drain(t);
    const zh = await mailTo(li.email, /^已拒绝：“Umowa”$/);
    assert.ok(zh.text?.includes('Pia（') && zh.text.includes('Zła kwota'), zh.text);
    await mailTo(ed.email, /^Declined: “Umowa”$/);

    const rui = { email: uniq('rui'), name: 'Rui', role: 'SIGNER', locale: 'pt' };
    const other = await createEnvelope(t, { title: 'Contrato', recipients: [rui] });
    await drain(t);
    const cancel = await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${other.envelopeId}`, headers: auth() });
    assert.ok(cancel.statusCode < 300, cancel.body);
    await drain(t);
    const pt = await mailTo(other.recipients[0].email, /^Cancelado: “Contrato”$/);
    assert.ok(pt.text?.includes('já não funciona'), pt.text);
    // The stored column, not just the API, decides: the engine recipient carries it.
    const rows = await t.container.db.execute(sql`SELECT locale FROM engine_recipients WHERE email = ${other.recipients[0].email}`);
    assert.equal((rows as unknown as { rows: { locale: string }[] }).rows[0].locale, 'pt');
  });
});
