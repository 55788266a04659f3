import type { DbOrTx } from '../../db/client.js';
import { enqueue } from '../../jobs/queue.js';
import type { EngineMeta } from '../engine.js';
import { SEND_EMAIL_JOB, type EmailJobPayload } from './send-email-job.js';

type Doc = { title: string | null; meta: EngineMeta; testSend: boolean };
type Person = { name: string; email: string };

const titleOf = (doc: Doc) => doc.title ?? 'a document';

/** Every message is a job enqueued in the state change's transaction: mail is sent after the commit, never inside a request. */
export function createNotifier() {
  const send = (tx: DbOrTx, doc: Doc, to: string, subject: string, text: string, attachments?: EmailJobPayload['attachments']) =>
    enqueue(tx, { type: SEND_EMAIL_JOB, payload: { to, subject, text, attachments, testSend: doc.testSend } satisfies EmailJobPayload, maxAttempts: 8 });

  return {
    invite: (tx: DbOrTx, doc: Doc, who: Person, link: string, action: 'sign' | 'approve' | 'view') =>
      send(
        tx,
        doc,
        who.email,
        doc.meta.subject ?? `Please ${action} ${titleOf(doc)}`,
        [`Hello ${who.name},`, '', doc.meta.message ?? `You have been asked to ${action} "${titleOf(doc)}".`, '', `Open the document: ${link}`, '', 'This link is personal; do not forward it.'].join('\n'),
      ),

    remind: (tx: DbOrTx, doc: Doc, who: Person, link: string) =>
      send(tx, doc, who.email, `Reminder: ${doc.meta.subject ?? `please act on ${titleOf(doc)}`}`, [`Hello ${who.name},`, '', `"${titleOf(doc)}" is still waiting for you.`, '', `Open the document: ${link}`].join('\n')),

    completed: (tx: DbOrTx, doc: Doc, who: Person, signedKey: string) =>
      send(tx, doc, who.email, `Completed: ${titleOf(doc)}`, [`Hello ${who.name},`, '', `"${titleOf(doc)}" has been signed by everyone. The sealed PDF is attached.`].join('\n'), [
        { filename: `${(doc.title ?? 'document').replace(/[^\w.-]+/g, '_').slice(0, 80)}-signed.pdf`, blobKey: signedKey, contentType: 'application/pdf' },
      ]),

    rejected: (tx: DbOrTx, doc: Doc, who: Person, by: Person, reason: string) =>
      send(tx, doc, who.email, `Declined: ${titleOf(doc)}`, [`Hello ${who.name},`, '', `${by.name} <${by.email}> declined to sign "${titleOf(doc)}".`, `Reason: ${reason}`, '', 'No further action is needed.'].join('\n')),

    cancelled: (tx: DbOrTx, doc: Doc, who: Person) =>
      send(tx, doc, who.email, `Cancelled: ${titleOf(doc)}`, [`Hello ${who.name},`, '', `"${titleOf(doc)}" was cancelled by its sender. The signing link no longer works.`].join('\n')),
  };
}

export type Notifier = ReturnType<typeof createNotifier>;
