import type { DbOrTx } from '../../db/client.js';
import { enqueue, type EnqueueInput } from '../../jobs/queue.js';
import {
  cancelledEmail,
  completedEmail,
  declinedEmail,
  invitationEmail,
  reminderEmail,
  automaticReminderEmail,
  type ReminderKind,
  type ReminderRecipient,
  type EnvelopeMail,
  type MailPerson,
  type RenderedEmail,
  type SigningAction,
} from '../../providers/email/templates/index.js';
import { resolveLocale } from '../../i18n/locales.js';
import type { EngineMeta } from '../engine.js';
import { logoFileOf, logoUrlOf } from '../../modules/account/logo.js';
import { SEND_EMAIL_JOB, type EmailJobPayload } from './send-email-job.js';
import { t } from '../../i18n/catalogue.js';

/** The engine document as the notices need it; `meta.senderName` is the sending account's name, recorded at create. */
type Doc = { title: string | null; meta: EngineMeta & { senderName?: string; brandColor?: string; logo?: string; defaultLocale?: string }; testSend: boolean; expiresAt: Date };
/** A recipient as their emails need them: `locale` their own (null: the account's default, copied onto the document), `timeZone` when their browser reported one. */
type Person = { name: string; email: string; locale?: string | null; timeZone?: string | null };
/** A signer's attachment as a completion email carries it: read from the store by key when the job runs. */
export type SignerFile = { name: string; blobKey: string; contentType: string; size: number };

/** The reader of an email: in their own language, else the account's default, else English; times in their zone when known. */
const readerOf = (doc: Doc, who: Person): MailPerson => ({ name: who.name, email: who.email, locale: resolveLocale(who.locale, doc.meta.defaultLocale), timeZone: who.timeZone ?? null });

/** SIGNER signs, APPROVER approves, everyone else (VIEWER, CC) only reads. */
export const actionOf = (role: string): SigningAction => (role === 'SIGNER' ? 'sign' : role === 'APPROVER' ? 'approve' : 'view');

const mailOfDoc = (doc: Doc, publicUrl: string | undefined): EnvelopeMail => ({
  title: doc.title,
  senderName: doc.meta.senderName ?? null,
  accent: doc.meta.brandColor,
  logoUrl: publicUrl && doc.meta.logo ? logoUrlOf(publicUrl, logoFileOf(`brand/${doc.meta.logo}`)) : null,
  subject: doc.meta.subject,
  message: doc.meta.message,
  expiresAt: doc.expiresAt,
  test: doc.testSend,
});

/**
 * Every message is a job enqueued in the state change's transaction: mail is sent after the commit,
 * never inside a request. The job carries the rendered text and HTML, so what was decided at the state
 * change is what is sent, even if the document changes later.
 */
/** `publicUrl`: where /brand/ logos are served from, for the absolute URL an email needs; none: emails show no logo. */
/** `attachmentsEmailMaxBytes`: signers' attachments a completion email carries together (SIGNER_ATTACHMENTS_EMAIL_MAX_BYTES); above it none, and a note says where they are. */
export function createNotifier(opts: { publicUrl?: string; attachmentsEmailMaxBytes?: number } = {}) {
  const mailOf = (doc: Doc) => mailOfDoc(doc, opts.publicUrl);
  const job = (doc: Doc, to: string, mail: RenderedEmail, attachments?: EmailJobPayload['attachments']): EnqueueInput => ({
    type: SEND_EMAIL_JOB,
    payload: { to, subject: mail.subject, text: mail.text, html: mail.html, attachments, testSend: doc.testSend } satisfies EmailJobPayload,
    maxAttempts: 8,
  });
  const send = (tx: DbOrTx, doc: Doc, to: string, mail: RenderedEmail, attachments?: EmailJobPayload['attachments']) => enqueue(tx, job(doc, to, mail, attachments));

  return {
    /** The jobs of invitations to everyone given, for the caller to enqueue with its own writes. */
    invitations: (doc: Doc, to: (Person & { link: string; action: SigningAction })[]) => to.map((who) => job(doc, who.email, invitationEmail(mailOf(doc), readerOf(doc, who), who.link, who.action))),

    /** The jobs of reminders to everyone given, likewise. */
    reminders: (doc: Doc, to: (Person & { role: string; link: string })[]) => to.map((who) => job(doc, who.email, reminderEmail(mailOf(doc), readerOf(doc, who), who.link, actionOf(who.role)))),

    /** The job of an automatic reminder or expiry warning (reminders.ts), in the recipient's language. */
    automaticReminder: (doc: Doc, who: ReminderRecipient, link: string, kind: ReminderKind) => job(doc, who.email, automaticReminderEmail(mailOf(doc), who, link, kind)),

    /** The sealed PDF, and the signers' attachments while they fit the bound together (else a note, in the recipient's language). */
    completed: (tx: DbOrTx, doc: Doc, who: Person, signedKey: string, attached: SignerFile[] = [], envelopeId = '') => {
      const total = attached.reduce((n, a) => n + a.size, 0);
      const fits = total <= (opts.attachmentsEmailMaxBytes ?? 10 * 1024 * 1024);
      const reader = readerOf(doc, who);
      const notes = attached.length === 0 ? [] : [t(resolveLocale(reader.locale), fits ? 'signing-attachments.emailAttached' : 'signing-attachments.emailTooLarge', { count: attached.length, envelopeId })];
      return send(tx, doc, who.email, completedEmail(mailOf(doc), reader, notes), [
        { filename: `${(doc.title ?? 'document').replace(/[^\w.-]+/g, '_').slice(0, 80)}-signed.pdf`, blobKey: signedKey, contentType: 'application/pdf' },
        ...(fits ? attached.map((a) => ({ filename: a.name, blobKey: a.blobKey, contentType: a.contentType })) : []),
      ]);
    },

    rejected: (tx: DbOrTx, doc: Doc, who: Person, by: Person & { role: string }, reason: string) =>
      send(tx, doc, who.email, declinedEmail(mailOf(doc), readerOf(doc, who), { name: by.name, email: by.email, action: actionOf(by.role) }, reason)),

    cancelled: (tx: DbOrTx, doc: Doc, who: Person) => send(tx, doc, who.email, cancelledEmail(mailOf(doc), readerOf(doc, who))),
  };
}

export type Notifier = ReturnType<typeof createNotifier>;
