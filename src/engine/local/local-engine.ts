import { randomUUID } from 'node:crypto';
import type { SQL } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { enqueue, enqueueStatement } from '../../jobs/queue.js';
import { putContent, type BlobStorage } from '../../providers/storage/index.js';
import type { CreateDocumentInput, CreatedDocument, EngineFieldInput, EngineMeta, EngineStatus, EnvelopeStatus, SigningEngine, StagedDocument } from '../engine.js';
import { resolveRules } from '../field-rules.js';
import { copyWithDocument } from './copy-status.repo.js';
import type { DocumentStatusRow, LocalEngineRepo, RecipientRow } from './local-engine.repo.js';
import { actionOf, type Notifier } from './notifications.js';
import type { TokenDeriver } from './tokens.js';
import { currentTurn } from './turns.js';
import { createLocalReminders } from './reminders.js';
import { createHandoversRepo, createRecipientReplacement } from './handovers.js';

export const SEAL_JOB = 'engine.seal';
/** A purged document's files are deleted by this job (purge-job.ts), after the purge commits. */
export const PURGE_DOCUMENT_JOB = 'engine.purge-document';

export type LocalEngineDeps = {
  repo: LocalEngineRepo;
  storage: BlobStorage;
  tokens: TokenDeriver;
  notifier: Notifier;
  /** `$SIGNING_URL`; a recipient's link is `$SIGNING_URL/<token>`. */
  signingUrl: string;
};

type StagedLocalDocument = StagedDocument & { input: CreateDocumentInput; originalKey: string; links: { linkSalt: string; tokenHash: string }[] };

export const documentKey = (documentId: string, name: string) => `documents/${documentId}/${name}`;

/**
 * The document as it stands after `acted` recipients acted (document-views.ts). Acting is final and
 * one at a time (each under the envelope lock), so the count names one set of values: the file under
 * a key never changes, and a new action makes a new key rather than a stale cache.
 */
export const progressKey = (documentId: string, acted: number) => documentKey(documentId, `progress-${acted}.pdf`);

/** Signing links kept in memory (see linkOf): past it the oldest is forgotten and derived again when read. */
const LINKS_KEPT = 10_000;

/**
 * The built-in engine: its own tables, its own invitations, and the recipient-side actions the
 * /sign routes drive. Status `SEALING` (all signers signed, seal job pending) is reported as the state
 * before it: COMPLETED means the sealed PDF is stored.
 */
export function createLocalEngine(deps: LocalEngineDeps) {
  const { repo, storage, tokens, notifier } = deps;
  // A link is an HMAC of its salt: every status read derives each recipient's. The links of the
  // envelopes being read are kept (the secret they derive from is in this process's memory anyway);
  // a new salt is a new key, so a revoked link is never answered from here.
  const links = new Map<string, string>();
  const linkOf = (r: Pick<RecipientRow, 'linkSalt'>) => {
    let link = links.get(r.linkSalt);
    if (link === undefined) {
      link = `${deps.signingUrl}/${tokens.token(r.linkSalt)}`;
      if (links.size >= LINKS_KEPT) links.delete(links.keys().next().value!);
      links.set(r.linkSalt, link);
    }
    return link;
  };

  /**
   * The recipients' links by engine recipient id. A recipient migrated from the old links has no
   * token hash until its first new link is derived here: nobody can hold that link before.
   */
  async function linksOf(tx: DbOrTx, engineRecipientIds: string[]): Promise<Map<string, string>> {
    const rows = await repo.linkSalts(tx, engineRecipientIds.map(Number));
    await fillTokenHashes(tx, rows);
    return new Map(rows.map((r) => [String(r.id), linkOf(r)]));
  }

  /** Stores the token hash of a migrated recipient's first new link (see linksOf). */
  async function fillTokenHashes(tx: DbOrTx, rows: Pick<RecipientRow, 'id' | 'linkSalt' | 'tokenHash'>[]): Promise<void> {
    for (const r of rows) if (r.tokenHash === null) await repo.fillTokenHash(tx, r.id, tokens.hash(tokens.token(r.linkSalt)));
  }

  /** A document's status as read (documentStatus's row), each recipient with its link. */
  async function statusOf(db: DbOrTx, doc: DocumentStatusRow | undefined): Promise<EngineStatus> {
    if (!doc) throw new AppError('DOCUMENSO_UNAVAILABLE', 'The signing engine has no such document');
    const { recipients } = doc;
    await fillTokenHashes(db, recipients);
    let status = doc.status as EnvelopeStatus | 'SEALING';
    if (status === 'SEALING') status = recipients.filter((r) => r.role === 'SIGNER').length > 1 ? 'PARTIALLY_SIGNED' : 'SENT';
    return {
      status,
      completedAt: doc.completedAt,
      recipients: recipients.map((r) => ({
        engineRecipientId: String(r.id),
        email: r.email,
        status: r.status,
        readStatus: r.readStatus as 'NOT_OPENED' | 'OPENED',
        sendStatus: r.sendStatus as 'NOT_SENT' | 'SENT',
        viewedAt: r.viewedAt,
        signedAt: r.signedAt,
        rejectedAt: r.rejectedAt,
        rejectionReason: r.rejectionReason,
        consentedAt: r.consentedAt,
        signingUrl: linkOf(r),
      })),
    };
  }

  const handovers = createHandoversRepo();
  const replace = createRecipientReplacement({ repo, handovers, tokens, notifier, linkOf });

  const missing = (version: 'signed' | 'original'): never => {
    throw new AppError('DOWNLOAD_FAILED', version === 'signed' ? 'The signing engine has no sealed PDF for this envelope' : 'The signing engine has no document for this envelope');
  };

  const embedded = (doc: { meta: EngineMeta }) => (doc.meta as { delivery?: string }).delivery === 'embedded';

  async function requireDocument(tx: DbOrTx, id: string, lock = false) {
    const doc = await repo.document(tx, id, lock);
    if (!doc) throw new AppError('DOCUMENSO_UNAVAILABLE', 'The signing engine has no such document');
    return doc;
  }

  /** The rules of a batch just written, its conditions resolved to the ids the insert chose. */
  async function writeRules(tx: DbOrTx, fields: EngineFieldInput[], ids: number[]) {
    const rows = fields.flatMap((f, i) => {
      const rules = resolveRules(f.rules, ids);
      return rules ? [{ id: ids[i], rules }] : [];
    });
    await repo.setFieldRules(tx, rows);
  }

  function fieldRows(documentId: string, recipients: RecipientRow[], fields: EngineFieldInput[]) {
    const byEmail = new Map(recipients.map((r) => [r.email.toLowerCase(), r]));
    return fields.map((f) => {
      const r = byEmail.get(f.recipientEmail.toLowerCase());
      if (!r) throw new AppError('RECIPIENT_NOT_FOUND', `No recipient ${f.recipientEmail} on this envelope`);
      return { documentId, recipientId: r.id, type: f.type, page: f.page, x: f.x, y: f.y, width: f.width, height: f.height, required: f.required, options: f.options, hide: f.hide };
    });
  }

  /** PENDING or DRAFT → SENT: the document is out, whoever's turn it is may act. Invitations are the caller's. */
  async function markSent(tx: Tx, documentId: string, set: { meta?: EngineMeta; testSend?: boolean } = {}, also: SQL[] = []) {
    await repo.markSent(tx, documentId, set, also);
  }

  /** Whom turnWrites invites. */
  function inviteTargets(doc: { meta: EngineMeta }, recipients: RecipientRow[], includeViewers: boolean): RecipientRow[] {
    // An embedded envelope's recipients are shown their link by the sender's app: no one is emailed, and
    // no one counts as notified (so a cancel or a reissued link emails no one either).
    if (embedded(doc)) return [];
    return [...currentTurn(recipients), ...(includeViewers ? recipients.filter((r) => r.role === 'VIEWER') : [])].filter((r) => !r.notifiedAt);
  }

  /** The writes that invite everyone whose turn it is and who was not invited yet (VIEWERs on distribution): their jobs and their mark. */
  function turnWrites(doc: { title: string | null; meta: EngineMeta; testSend: boolean; expiresAt: Date }, recipients: RecipientRow[], includeViewers: boolean): SQL[] {
    const targets = inviteTargets(doc, recipients, includeViewers);
    if (targets.length === 0) return [];
    const jobs = notifier.invitations(doc, targets.map((r) => ({ name: r.name, email: r.email, locale: r.locale, timeZone: r.timeZone, link: linkOf(r), action: actionOf(r.role) })));
    return [enqueueStatement(jobs), repo.notifiedStatement(targets.map((r) => r.id))];
  }

  /** Revokes one recipient's link (a new salt); the next read or invitation carries the new one. */
  async function revokeLink(tx: Tx, recipientId: number): Promise<string> {
    const linkSalt = tokens.newSalt();
    await repo.replaceLinkSalt(tx, recipientId, linkSalt, tokens.hash(tokens.token(linkSalt)));
    return linkOf({ linkSalt });
  }

  /** Invites everyone whose turn it is, in one statement. */
  async function notifyTurn(tx: Tx, doc: { title: string | null; meta: EngineMeta; testSend: boolean; expiresAt: Date }, recipients: RecipientRow[], includeViewers: boolean) {
    await repo.together(tx, turnWrites(doc, recipients, includeViewers));
  }

  const reminders = createLocalReminders({ repo, notifier, linksOf });
  /** A document's attachments with their uploader's address and their blob. */
  async function attachmentRecords(db: DbOrTx, documentId: string) {
    const [rows, recipients] = await Promise.all([repo.attachments(db, documentId), repo.recipients(db, documentId)]);
    const emailOf = new Map(recipients.map((r) => [r.id, r.email]));
    return rows.map(({ documentId: _doc, recipientId, ...a }) => ({ ...a, recipientEmail: emailOf.get(recipientId) ?? '' }));
  }

  const engine: SigningEngine = {
    dueReminders: reminders.dueReminders,
    sendDueReminders: reminders.sendDueReminders,

    async stageDocument(input): Promise<StagedLocalDocument> {
      const id = randomUUID();
      const originalKey = documentKey(id, 'original.pdf');
      // Before the transaction, and before the row: a create that fails after this leaves an
      // unreferenced blob for the sweep, never a row without its file. A document given as a file is
      // the request's upload (prepareDocument's answer), which it no longer needs: moved, not copied,
      // where the store can (a moved upload is then a blob like any other, the sweep's once unreferenced).
      await putContent(storage, originalKey, input.document, { move: true });
      const links = input.recipients.map(() => {
        const linkSalt = tokens.newSalt();
        return { linkSalt, tokenHash: tokens.hash(tokens.token(linkSalt)) };
      });
      return { engineEnvelopeId: id, input, originalKey, links };
    },

    async createDocument(tx, staged): Promise<CreatedDocument> {
      const { engineEnvelopeId: id, input, originalKey, links } = staged as StagedLocalDocument;
      const recipients = input.recipients.map((r, i) => ({
        position: r.position,
        email: r.email,
        name: r.name,
        role: r.role,
        signingOrder: r.signingOrder,
        linkSalt: links[i].linkSalt,
        tokenHash: links[i].tokenHash,
        verificationRequired: r.verificationRequired ?? false,
        locale: r.locale ?? null,
      }));
      const positionOf = new Map(recipients.map((r) => [r.email.toLowerCase(), r.position]));
      const fields = input.fields.map((f) => {
        const position = positionOf.get(f.recipientEmail.toLowerCase());
        if (position === undefined) throw new AppError('RECIPIENT_NOT_FOUND', `No recipient ${f.recipientEmail} on this envelope`);
        return { recipientPosition: position, type: f.type, page: f.page, x: f.x, y: f.y, width: f.width, height: f.height, required: f.required, options: f.options, hide: f.hide };
      });
      const written = await repo.insertDocumentTree(
        tx,
        {
          id,
          status: input.draft ? 'DRAFT' : 'PENDING',
          title: input.title,
          originalKey,
          sha256: input.document.sha256,
          pages: input.document.info.pages,
          testSend: input.testSend,
          // The sender's name rides in the engine's own meta, for the invitations; it is not the caller's meta.
          meta: { ...input.meta, ...(input.allowDelegation ? { allowDelegation: true as const } : {}), ...(input.senderName ? { senderName: input.senderName } : {}), ...(input.consentText ? { consentText: input.consentText } : {}), ...(input.delivery === 'embedded' ? { delivery: 'embedded' as const } : {}), ...(input.brandColor ? { brandColor: input.brandColor } : {}), ...(input.logo ? { logo: input.logo } : {}), ...(input.reminders ? { reminders: input.reminders } : {}), ...(input.expiryWarningDays ? { expiryWarningDays: input.expiryWarningDays } : {}), ...(input.defaultLocale ? { defaultLocale: input.defaultLocale } : {}) },
          expiresAt: input.expiresAt,
        },
        recipients,
        fields,
      );
      await writeRules(tx, input.fields, written.fieldIds);
      const emailAt = new Map(recipients.map((r) => [r.position, r.email]));
      return {
        engineEnvelopeId: id,
        engineNumericId: String(written.numericId),
        recipients: recipients.map((r) => ({ email: r.email, engineRecipientId: String(written.recipientIds.get(r.position)), signingUrl: linkOf(r) })),
        fields: fields.map((f, i) => ({ engineFieldId: written.fieldIds[i], recipientEmail: emailAt.get(f.recipientPosition)! })),
      };
    },

    /** Nothing to undo: the staged file, referenced by no row, is the blob sweep's. */
    async discardStaged() {},

    async addFields(tx, engineEnvelopeId, fields) {
      const doc = await requireDocument(tx, engineEnvelopeId, true);
      if (doc.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', 'Fields can be added only while the envelope is a DRAFT');
      const recipients = await repo.recipients(tx, doc.id);
      const rows = await repo.insertFields(tx, fieldRows(doc.id, recipients, fields));
      await writeRules(tx, fields, rows.map((r) => r.id));
      const emailOf = new Map(recipients.map((r) => [r.id, r.email]));
      return rows.map((f) => ({ engineFieldId: f.id, recipientEmail: emailOf.get(f.recipientId)! }));
    },

    async removeField(tx, engineEnvelopeId, engineFieldId) {
      const doc = await requireDocument(tx, engineEnvelopeId, true);
      if (doc.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', 'Fields can be removed only while the envelope is a DRAFT');
      const dependents = await repo.dependentFields(tx, doc.id, engineFieldId);
      if (dependents.length) throw new AppError('FIELD_HAS_DEPENDENTS', `Field ${engineFieldId} controls the visibleWhen of field(s) ${dependents.join(', ')}; remove or change those first`, { fieldIds: dependents });
      return repo.deleteField(tx, doc.id, engineFieldId);
    },

    async updateField(tx, engineEnvelopeId, engineFieldId, placement) {
      const doc = await requireDocument(tx, engineEnvelopeId, true);
      if (doc.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', 'Fields can be changed only while the envelope is a DRAFT');
      return repo.updateFieldPlacement(tx, doc.id, engineFieldId, placement);
    },

    async send(tx: Tx, engineEnvelopeId: string, opts: { meta?: EngineMeta; testSend?: boolean } = {}) {
      const doc = await requireDocument(tx, engineEnvelopeId, true);
      if (doc.status !== 'DRAFT' && doc.status !== 'PENDING') throw new AppError('SEND_FAILED', `The document is ${doc.status}, not sendable`);
      const meta = { ...doc.meta, ...opts.meta };
      const testSend = opts.testSend ?? doc.testSend;
      const recipients = await repo.recipients(tx, doc.id);
      const invited = new Set(inviteTargets({ meta }, recipients, true).map((r) => r.id));
      // SENT and the invitations in one statement.
      await markSent(tx, doc.id, { meta, testSend }, turnWrites({ ...doc, meta, testSend }, recipients, true));
      // The status as that statement left it (read under the lock: nothing else moved), so the caller's
      // sync does not read it again: SENT, and whoever was invited marked sent (notifiedStatement).
      return statusOf(tx, { status: 'SENT', completedAt: doc.completedAt, recipients: recipients.map((r) => (invited.has(r.id) ? { ...r, sendStatus: 'SENT' } : r)) });
    },

    async resend(tx, engineEnvelopeId) {
      const doc = await requireDocument(tx, engineEnvelopeId, true);
      if (embedded(doc)) return [];
      const turn = currentTurn(await repo.recipients(tx, doc.id));
      const jobs = notifier.reminders(doc, turn.map((r) => ({ name: r.name, email: r.email, locale: r.locale, timeZone: r.timeZone, role: r.role, link: linkOf(r) })));
      if (turn.length) await repo.together(tx, [enqueueStatement(jobs), repo.notifiedStatement(turn.map((r) => r.id))]);
      return turn.map((r) => ({ name: r.name, email: r.email }));
    },

    /**
     * A new link, recorded in the event log (the audit certificate shows when a link was replaced).
     * Whoever was emailed the old one and has not acted gets the new one by email; anyone else gets
     * theirs with their turn's invitation, which is made from the salt as it is then.
     */
    async reissueLink(tx, engineEnvelopeId, engineRecipientId) {
      const doc = await requireDocument(tx, engineEnvelopeId, true);
      const me = (await repo.recipients(tx, doc.id)).find((r) => String(r.id) === engineRecipientId);
      if (!me) throw new AppError('RECIPIENT_NOT_FOUND', 'No such recipient on this envelope');
      const signingUrl = await revokeLink(tx, me.id);
      await repo.insertEvent(tx, { documentId: doc.id, recipientId: me.id, event: 'LINK_REISSUED' });
      const invited = me.notifiedAt !== null && me.status === 'PENDING';
      if (invited) await enqueue(tx, notifier.invitations(doc, [{ name: me.name, email: me.email, locale: me.locale, timeZone: me.timeZone, link: signingUrl, action: actionOf(me.role) }]));
      return { signingUrl, invited };
    },

    async replaceRecipient(tx, engineEnvelopeId, engineRecipientId, to) {
      return replace(tx, await requireDocument(tx, engineEnvelopeId, true), engineRecipientId, to);
    },

    async cancel(tx, engineEnvelopeId) {
      const doc = await requireDocument(tx, engineEnvelopeId, true);
      await repo.updateDocument(tx, doc.id, { status: 'CANCELLED' });
      await repo.insertEvent(tx, { documentId: doc.id, event: 'CANCELLED' });
      for (const r of await repo.recipients(tx, doc.id)) if (r.notifiedAt) await notifier.cancelled(tx, doc, r);
    },

    async expire(tx: Tx, engineEnvelopeId: string) {
      const doc = await requireDocument(tx, engineEnvelopeId, true);
      // Only a document still waiting for signatures expires: once every signer signed (SEALING) the
      // signing is complete and only the seal job ends it; a terminal state is final.
      if (!['DRAFT', 'PENDING', 'SENT', 'PARTIALLY_SIGNED'].includes(doc.status)) return;
      await repo.updateDocument(tx, doc.id, { status: 'EXPIRED' });
      await repo.insertEvent(tx, { documentId: doc.id, event: 'EXPIRED' });
    },

    /** One statement, which also carries each recipient's link: a status read needs no other. */
    async status(db, engineEnvelopeId): Promise<EngineStatus> {
      return statusOf(db, await repo.documentStatus(db, engineEnvelopeId));
    },

    /** The same with the stored copy, in one statement (copy-status.repo.ts). */
    async statusWithCopy(db, envelopeId, owner) {
      const read = await copyWithDocument(db, envelopeId, owner);
      if (!read) return undefined;
      const { document, ...copy } = read;
      return { ...copy, status: document === 'incomplete' ? await engine.status(db, copy.envelope.engineEnvelopeId) : await statusOf(db, document) };
    },
    async signedPdf(db, engineEnvelopeId) {
      const doc = await requireDocument(db, engineEnvelopeId);
      return (doc.signedKey ? await storage.get(doc.signedKey) : undefined) ?? missing('signed');
    },

    async originalPdf(db, engineEnvelopeId) {
      const doc = await requireDocument(db, engineEnvelopeId);
      return (await storage.get(doc.originalKey)) ?? missing('original');
    },

    async openPdf(db, engineEnvelopeId, version) {
      const doc = await requireDocument(db, engineEnvelopeId);
      const key = version === 'signed' ? doc.signedKey : doc.originalKey;
      return (key ? await storage.getStream(key) : undefined) ?? missing(version);
    },

    async attachments(db, engineEnvelopeId) {
      return (await attachmentRecords(db, engineEnvelopeId)).map(({ blobKey: _key, ...a }) => a);
    },

    async openAttachment(db, engineEnvelopeId, attachmentId) {
      const found = (await attachmentRecords(db, engineEnvelopeId)).find((a) => a.id === attachmentId);
      const opened = found && (await storage.getStream(found.blobKey));
      if (!found || !opened) return undefined;
      const { blobKey: _key, ...attachment } = found;
      return { ...opened, attachment };
    },

    async purge(tx: Tx, engineEnvelopeId: string) {
      const doc = await requireDocument(tx, engineEnvelopeId, true);
      await repo.updateDocument(tx, doc.id, { purgedAt: new Date() });
      await enqueue(tx, { type: PURGE_DOCUMENT_JOB, payload: { documentId: doc.id }, dedupeKey: `purge-document:${doc.id}` });
    },
  };

  return {
    engine,
    /** Who held each recipient's place before (the certificate, a delegator's old link). */
    handovers,
    linksOf,
    revokeLink,
    /** Queues sealing once the last signer signed; the seal job completes the document. */
    async requestSeal(tx: Tx, documentId: string): Promise<void> {
      await repo.updateDocument(tx, documentId, { status: 'SEALING' });
      await enqueue(tx, { type: SEAL_JOB, payload: { documentId }, dedupeKey: `seal:${documentId}`, maxAttempts: 10 });
    },
    notifyTurn,
    markSent,
  };
}

export type LocalEngine = ReturnType<typeof createLocalEngine>;
