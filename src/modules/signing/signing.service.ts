import type { Db, Tx } from '../../db/client.js';
import { blockedReason, endedReason, type ClientInfo, type CompleteInput, type RecipientActions } from '../../engine/local/recipient-actions.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import { currentTurn } from '../../engine/local/turns.js';
import { AppError } from '../../errors.js';
import type { EnvelopeSync } from '../envelopes/envelope-sync.js';

/**
 * The recipient's side. Every action locks the envelope row first (the same lock every other state
 * change takes), acts in the engine, and syncs the stored copy and its events in one transaction.
 */
/** The document is served while the envelope is active (as it stands) and once COMPLETED (sealed); after any other end, never. */
function servesDocument(doc: Parameters<typeof endedReason>[0]): boolean {
  const ended = endedReason(doc);
  return !ended || ended === 'completed';
}

export function createSigningService(deps: { db: Db; actions: RecipientActions; sync: Pick<EnvelopeSync, 'lockAndSync'>; storage: BlobStorage }) {
  const { actions } = deps;

  async function withRecipient<T>(token: string, work: (tx: Tx, ctx: Awaited<ReturnType<RecipientActions['load']>>) => Promise<T>, opts: { distribute?: boolean } = {}): Promise<T> {
    return deps.db.transaction(async (tx) => {
      const recipient = await actions.recipientOf(tx, token);
      if (!recipient) throw new AppError('SIGNING_LINK_INVALID', 'This signing link is not valid');
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
        if (await actions.recordView(tx, doc, me, client)) Object.assign(me, { readStatus: 'OPENED' });
        const reason = blockedReason(doc, me, recipients);
        const turn = currentTurn(recipients);
        return {
          envelope: { id: doc.id, title: doc.title, status: doc.status === 'SEALING' ? 'COMPLETED' : doc.status },
          recipient: { name: me.name, email: me.email, role: me.role, status: me.status, readStatus: me.readStatus },
          canAct: reason === null,
          reason,
          waitingFor: reason === 'waiting' ? turn.filter((r) => r.id !== me.id).map((r) => ({ name: r.name, email: r.email })) : [],
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
          })),
          pages: doc.pages.map((p) => ({ width: p.width, height: p.height })),
          // None after an end that serves no document: the page then shows why, and offers no download.
          documentUrl: servesDocument(doc) ? `/sign/${token}/document` : null,
          redirectUrl: doc.meta.redirectUrl ?? null,
        };
      });
    },

    async document(token: string): Promise<Uint8Array> {
      return deps.db.transaction(async (tx) => {
        const recipient = await actions.recipientOf(tx, token);
        if (!recipient) throw new AppError('SIGNING_LINK_INVALID', 'This signing link is not valid');
        const { doc } = await actions.load(tx, recipient, false);
        if (doc.status === 'DRAFT') throw new AppError('SIGNING_LINK_INVALID', 'This envelope has not been sent yet');
        if (!servesDocument(doc)) throw new AppError('ENVELOPE_NOT_ACTIVE', `The envelope is ${endedReason(doc)}`);
        const key = doc.status === 'COMPLETED' && doc.signedKey ? doc.signedKey : doc.originalKey;
        const bytes = await deps.storage.get(key);
        if (!bytes) throw new AppError('DOCUMENT_PURGED', 'The document is no longer available');
        return bytes;
      });
    },

    async complete(token: string, input: CompleteInput, client: ClientInfo) {
      const imageKey = await actions.storeSignatureImage(deps.db, token, input);
      return withRecipient(token, async (tx, ctx) => {
        const status = await actions.complete(tx, ctx, input, client, imageKey);
        return { status, redirectUrl: ctx.doc.meta.redirectUrl ?? null };
      }, { distribute: true });
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
