import type { Db, Tx } from '../../db/client.js';
import { blockedReason, type ClientInfo, type CompleteInput, type RecipientActions } from '../../engine/local/recipient-actions.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import { currentTurn } from '../../engine/local/turns.js';
import { AppError } from '../../http/errors.js';
import type { EnvelopesRepo } from '../envelopes/envelopes.repo.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';

/**
 * The recipient's side. Every action locks the envelope row first (the same lock every other state
 * change takes), acts in the engine, and syncs the stored copy and its events in one transaction.
 */
export function createSigningService(deps: { db: Db; actions: RecipientActions; envelopesRepo: EnvelopesRepo; envelopes: EnvelopesService; storage: BlobStorage }) {
  const { actions } = deps;

  async function withRecipient<T>(token: string, work: (tx: Tx, ctx: Awaited<ReturnType<RecipientActions['load']>>) => Promise<T>): Promise<T> {
    return deps.db.transaction(async (tx) => {
      const recipient = await actions.recipientOf(tx, token);
      if (!recipient) throw new AppError('SIGNING_LINK_INVALID', 'This signing link is not valid');
      const envelope = await deps.envelopesRepo.findByEngineId(tx, recipient.documentId, true);
      if (!envelope) throw new AppError('SIGNING_LINK_INVALID', 'This signing link is not valid');
      const ctx = await actions.load(tx, recipient, true);
      if (ctx.doc.status === 'DRAFT') throw new AppError('SIGNING_LINK_INVALID', 'This envelope has not been sent yet');
      const result = await work(tx, ctx);
      // The work changed only the engine's rows; the stored copy is still the locked row read above.
      await deps.envelopes.syncFromEngine(tx, envelope);
      return result;
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
          documentUrl: `/sign/${token}/document`,
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
        const key = doc.status === 'COMPLETED' && doc.signedKey ? doc.signedKey : doc.originalKey;
        const bytes = await deps.storage.get(key);
        if (!bytes) throw new AppError('DOCUMENT_PURGED', 'The document is no longer available');
        return bytes;
      });
    },

    async complete(token: string, input: CompleteInput, client: ClientInfo) {
      return withRecipient(token, async (tx, ctx) => {
        const status = await actions.complete(tx, ctx, input, client);
        return { status, redirectUrl: ctx.doc.meta.redirectUrl ?? null };
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
