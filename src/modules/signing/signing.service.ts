import type { Db, Tx } from '../../db/client.js';
import {
  awaitsVerification,
  blockedReason,
  endedReason,
  verificationRequired,
  type ClientInfo,
  type CompleteInput,
  type RecipientActions,
} from '../../engine/local/recipient-actions.js';
import type { DocumentStream } from '../../engine/engine.js';
import type { FieldRules } from '../../engine/field-rules.js';
import type { DocumentViews } from '../../engine/local/document-views.js';
import type { DocumentRow, RecipientRow } from '../../engine/local/local-engine.repo.js';
import { currentTurn } from '../../engine/local/turns.js';
import { AppError } from '../../errors.js';
import { sha256Hex } from '../../lib/crypto.js';
import { maskEmail } from '../../providers/identity/index.js';
import type { EnvelopeSync } from '../envelopes/envelope-sync.js';
import type { VerificationsService } from '../verifications/verifications.service.js';
import type { RecipientHandover } from '../envelopes/recipient-handover.js';
import { assertCanDelegate, canDelegate } from './delegation.js';
import { attachmentDto, claimedType, type AttachmentUpload, type SignerAttachments } from '../../engine/local/signer-attachments.js';
import { consentTextFor } from './consent-text.js';

/**
 * The recipient's side. Every action locks the envelope row first (the same lock every other state
 * change takes), acts in the engine, and syncs the stored copy and its events in one transaction.
 */
/** The document is served while the envelope is active (as it stands) and once COMPLETED (sealed); after any other end, never. */
function servesDocument(doc: Parameters<typeof endedReason>[0]): boolean {
  const ended = endedReason(doc);
  return !ended || ended === 'completed';
}

/** The code routes serve a gated recipient of an active envelope only. */
function requireGate(doc: DocumentRow, me: RecipientRow): void {
  const ended = endedReason(doc);
  if (ended) throw new AppError('ENVELOPE_NOT_ACTIVE', `The envelope is ${ended}`);
  if (!me.verificationRequired) throw new AppError('INVALID_STATE', 'This recipient needs no email verification');
}

/** The text this document's recipients agree to: the account's, copied at create; the built-in one for a document made before that. */
const consentTextOf = (doc: DocumentRow, me: RecipientRow, client: ClientInfo) => consentTextFor(doc.meta.consentText, me.locale, client.locale);

const consentOf = (doc: DocumentRow, me: RecipientRow, client: ClientInfo) => ({ given: me.consentedAt !== null, consentedAt: me.consentedAt?.toISOString() ?? null, text: consentTextOf(doc, me, client) });

const verificationOf = (me: RecipientRow) => ({ required: me.verificationRequired, verified: me.verifiedAt !== null, verifiedAt: me.verifiedAt?.toISOString() ?? null });

/**
 * A gated recipient's session before their code is confirmed. Whoever holds the link is not known to
 * be the recipient yet, so they learn only that a code is needed and where it goes (the address
 * masked): no title, no names, no fields, no document. Nothing is recorded either: the view (readStatus
 * OPENED, envelope.viewed, the IP on the certificate) is the recipient's, recorded on their first read
 * after the code.
 */
function beforeTheCode(doc: DocumentRow, me: RecipientRow) {
  return {
    envelope: { id: null, title: null, status: doc.status },
    recipient: { name: null, email: maskEmail(me.email), role: null, status: null, readStatus: null },
    canAct: false,
    reason: 'verification_required' as const,
    waitingFor: [],
    verification: verificationOf(me),
    consent: null,
    sender: null,
    expiresAt: null,
    fields: [],
    delegation: { allowed: false },
    pages: [],
    documentUrl: null,
    downloadUrl: null,
    redirectUrl: null,
  };
}

export function createSigningService(deps: {
  db: Db;
  actions: RecipientActions;
  sync: Pick<EnvelopeSync, 'lockAndSync'>;
  views: DocumentViews;
  verifications: Pick<VerificationsService, 'requestRecipientCode' | 'confirmRecipientCode'>;
  handover: Pick<RecipientHandover, 'delegate'>;
  attachments: SignerAttachments;
}) {
  const { actions } = deps;

  /** Why a token opens nothing: its recipient handed the document on (410), or it is unknown or revoked (404). */
  const unknownLink = async (tx: Tx, token: string) =>
    (await actions.handedOver(tx, token))
      ? new AppError('SIGNING_LINK_HANDED_OVER', 'This document was handed to someone else: this link no longer opens it')
      : new AppError('SIGNING_LINK_INVALID', 'This signing link is not valid');

  async function withRecipient<T>(token: string, work: (tx: Tx, ctx: Awaited<ReturnType<RecipientActions['load']>>) => Promise<T>, opts: { distribute?: boolean } = {}): Promise<T> {
    return deps.db.transaction(async (tx) => {
      const recipient = await actions.recipientOf(tx, token);
      if (!recipient) throw await unknownLink(tx, token);
      // Signing a PENDING envelope distributes it first, synced on its own so the stored copy moves
      // PENDING → SENT (envelope.sent) before the signature's move; a refused action rolls both back.
      if (opts.distribute) await deps.sync.lockAndSync(tx, recipient.documentId, async () => actions.distributeOnAction(tx, await actions.load(tx, recipient, true)));
      const done = await deps.sync.lockAndSync(tx, recipient.documentId, async () => {
        const ctx = await actions.load(tx, recipient, true);
        if (ctx.doc.status === 'DRAFT') throw new AppError('SIGNING_LINK_INVALID', 'This envelope has not been sent yet');
        return work(tx, ctx);
      });
      if (!done) throw new AppError('SIGNING_LINK_INVALID', 'This signing link is not valid');
      return done.value;
    });
  }

  return {
    async session(token: string, client: ClientInfo) {
      return withRecipient(token, async (tx, ctx) => {
        const { doc, me, recipients, fields } = ctx;
        if (awaitsVerification(doc, me)) return beforeTheCode(doc, me);
        if (await actions.recordView(tx, doc, me, client)) Object.assign(me, { readStatus: 'OPENED' });
        const reason = blockedReason(doc, me, recipients);
        const turn = currentTurn(recipients);
        return {
          envelope: { id: doc.id, title: doc.title, status: doc.status === 'SEALING' ? 'COMPLETED' : doc.status },
          recipient: { name: me.name, email: me.email, role: me.role, status: me.status, readStatus: me.readStatus },
          canAct: reason === null,
          reason,
          waitingFor: reason === 'waiting' ? turn.filter((r) => r.id !== me.id).map((r) => ({ name: r.name, email: r.email })) : [],
          verification: verificationOf(me),
          consent: consentOf(doc, me, client),
          // Who asks, and why, and by when: the account's name as recorded at create, the sender's message, the deadline.
          sender: { name: doc.meta.senderName ?? null, message: doc.meta.message ?? null, logo: doc.meta.logo ?? null },
          expiresAt: doc.expiresAt.toISOString(),
          fields: fields.map((f) => ({
            fieldId: f.id,
            type: f.type,
            page: f.page,
            positionX: f.x,
            positionY: f.y,
            width: f.width,
            height: f.height,
            required: f.required,
            options: f.options,
            value: actions.prefill(me, f),
            ...(f.type === 'FILE' ? { attachment: ((a) => (a ? attachmentDto(a) : null))(ctx.attachments.find((a) => a.fieldId === f.id)) } : {}),
            // The rules the page shows and checks as the server will (label, validation, read-only, condition).
            ...signingRules(f.rules),
          })),
          // "I am not the right person": offered where the sender allowed it and this recipient may still act.
          delegation: { allowed: canDelegate(doc, me, recipients) },
          pages: doc.pages.map((p) => ({ width: p.width, height: p.height })),
          // None after an end that serves no document: the page then shows why, and offers no download.
          documentUrl: servesDocument(doc) ? `/sign/${token}/document` : null,
          // The recipient's copy: set only once sealed (status above says COMPLETED while the seal job runs).
          downloadUrl: doc.status === 'COMPLETED' && doc.signedKey ? `/sign/${token}/document` : null,
          redirectUrl: doc.meta.redirectUrl ?? null,
        };
      });
    },

    /**
     * The sealed PDF once COMPLETED; before that the document as it stands (document-views.ts). What
     * to serve is read in a short transaction; the storage reads and any render happen after it.
     */
    /** `asSender`: the envelope's owner previews it (dashboard): a recipient's code gate guards link holders, not the sender. */
    async document(token: string, opts: { asSender?: boolean } = {}): Promise<DocumentStream> {
      const { documentId, view } = await deps.db.transaction(async (tx) => {
        const recipient = await actions.recipientOf(tx, token);
        if (!recipient) throw await unknownLink(tx, token);
        const { doc, me, recipients } = await actions.load(tx, recipient, false);
        if (doc.status === 'DRAFT') throw new AppError('SIGNING_LINK_INVALID', 'This envelope has not been sent yet');
        if (!servesDocument(doc)) throw new AppError('ENVELOPE_NOT_ACTIVE', `The envelope is ${endedReason(doc)}`);
        if (!opts.asSender && awaitsVerification(doc, me)) throw verificationRequired();
        // Its files may still be there, their deletion queued: the purge counts from its commit.
        if (doc.purgedAt) throw new AppError('DOCUMENT_PURGED', 'The document is no longer available');
        return { documentId: doc.id, view: await deps.views.plan(tx, doc, recipients) };
      });
      const opened = await deps.views.open(documentId, view);
      if (!opened) throw new AppError('DOCUMENT_PURGED', 'The document is no longer available');
      return opened;
    },

    async complete(token: string, input: CompleteInput, client: ClientInfo) {
      const imageKey = await actions.storeSignatureImage(deps.db, token, input);
      try {
        return await withRecipient(token, async (tx, ctx) => {
          const status = await actions.complete(tx, ctx, input, client, imageKey);
          return { status, redirectUrl: ctx.doc.meta.redirectUrl ?? null };
        }, { distribute: true });
      } catch (err) {
        // An AppError is a refusal thrown inside the transaction, which rolled back: nothing points to
        // the image. Any other error may have come after a commit (its outcome unknown): the blob
        // sweep, which checks for references, decides then.
        if (imageKey && err instanceof AppError) await actions.discardSignatureImage(imageKey);
        throw err;
      }
    },

    /**
     * A FILE field's attachment. Refusals that need no file come first (the link, the turn, the field,
     * the sizes, the upload count); then the sandbox checks the bytes and the store takes them, outside
     * any transaction; then the row, under the envelope lock, replacing the field's earlier file, whose
     * blob is deleted once that commits. A refused row deletes the new blob at once.
     */
    async attach(token: string, fieldId: number, upload: AttachmentUpload | undefined, client: ClientInfo) {
      if (!upload) throw new AppError('MISSING_FILE', 'Send multipart/form-data with the file as its `file` part');
      const type = claimedType(upload);
      const recipient = await actions.recipientOf(deps.db, token);
      if (!recipient) throw new AppError('SIGNING_LINK_INVALID', 'This signing link is not valid');
      const before = await actions.load(deps.db, recipient, false);
      if (before.doc.status === 'DRAFT') throw new AppError('SIGNING_LINK_INVALID', 'This envelope has not been sent yet');
      await deps.attachments.plan(deps.db, before, fieldId, upload.size);
      const stored = await deps.attachments.store(before, upload, type);
      let replaced: string | undefined;
      try {
        const { attachment, replaced: old } = await withRecipient(token, (tx, ctx) => deps.attachments.record(tx, ctx, fieldId, stored, client), { distribute: true });
        replaced = old?.blobKey;
        return attachmentDto(attachment);
      } catch (err) {
        if (err instanceof AppError) await deps.attachments.discard(stored.blobKey);
        throw err;
      } finally {
        if (replaced) await deps.attachments.discard(replaced);
      }
    },

    /** Emails a gated recipient their code (rate-limited by the verifications module). */
    async requestCode(token: string) {
      return withRecipient(token, async (tx, { doc, me }) => {
        requireGate(doc, me);
        if (me.verifiedAt) return { verified: true, sentTo: null, expiresAt: null, retryAfterSeconds: null };
        const sent = await deps.verifications.requestRecipientCode(tx, String(me.id));
        return { verified: false, sentTo: sent.sentTo, expiresAt: new Date(sent.expiresAt).toISOString(), retryAfterSeconds: sent.retryAfterSeconds ?? null };
      });
    },

    /**
     * Checks a gated recipient's code; the right one unlocks the document and is recorded (verifiedAt,
     * and an event for the certificate) in the same transaction. A wrong code is answered 400 only
     * after its transaction commits: the attempt it counted must stick, or guessing would be free.
     */
    async confirmCode(token: string, code: string, client: ClientInfo) {
      let attemptsLeft: number | undefined;
      const result = await withRecipient(token, async (tx, ctx) => {
        const { doc, me } = ctx;
        requireGate(doc, me);
        if (me.verifiedAt) return { verified: true as const, verifiedAt: me.verifiedAt.toISOString() };
        const checked = await deps.verifications.confirmRecipientCode(tx, String(me.id), code);
        if (!checked.verified) {
          attemptsLeft = checked.attemptsLeft;
          return null;
        }
        const verifiedAt = new Date(checked.verifiedAt!);
        await actions.markVerified(tx, ctx, verifiedAt, client);
        return { verified: true as const, verifiedAt: verifiedAt.toISOString() };
      });
      if (result) return result;
      // As the /verify page answers: the fifth wrong code fails the verification for good.
      const left = attemptsLeft ?? 0;
      if (left === 0) throw new AppError('VERIFICATION_FAILED', 'Too many wrong codes: this verification failed', { status: 'failed', attemptsLeft: 0 });
      throw new AppError('INVALID_CODE', `That code is not right; ${left} ${left === 1 ? 'attempt' : 'attempts'} left`, { attemptsLeft: left });
    },

    /** The recipient agrees to use electronic records and signatures; once (a repeat answers the first). */
    async consent(token: string, timeZone: string | null, client: ClientInfo) {
      return withRecipient(token, async (tx, ctx) => {
        const consentedAt = await actions.consent(tx, ctx, { textSha256: sha256Hex(consentTextOf(ctx.doc, ctx.me, client)), timeZone }, client);
        return { consented: true as const, consentedAt: consentedAt.toISOString() };
      });
    },

    /**
     * The recipient hands the document to someone else (the envelope allows it): the delegate is
     * invited with a link of their own, and this link answers 410 SIGNING_LINK_HANDED_OVER from then on.
     */
    async delegate(token: string, to: { name: string; email: string; reason?: string | null }, client: ClientInfo) {
      return deps.db.transaction(async (tx) => {
        const recipient = await actions.recipientOf(tx, token);
        if (!recipient) throw await unknownLink(tx, token);
        const check = async () => {
          const ctx = await actions.load(tx, recipient, true);
          assertCanDelegate(ctx, to.email);
          return String(ctx.me.id);
        };
        const done = await deps.handover.delegate(tx, recipient.documentId, check, { name: to.name, email: to.email, reason: to.reason ?? null, client });
        return { delegated: true as const, to: { name: done.recipient.name, email: done.recipient.email }, invitationSent: done.invitationSent };
      });
    },

    async reject(token: string, reason: string, client: ClientInfo) {
      return withRecipient(token, async (tx, ctx) => {
        await actions.reject(tx, ctx, reason, client);
        return { status: 'REJECTED' as const };
      });
    },
  };
}

export type SigningService = ReturnType<typeof createSigningService>;

/** A field's rules as the signing page gets them (the sender's value is the field's value; the ref stays with the sender). */
function signingRules(rules: FieldRules | null) {
  if (!rules) return {};
  const { label, placeholder, validation, readOnly, visibleWhen } = rules;
  return { label, placeholder, validation, readOnly, visibleWhen };
}
