import type { RequestContext } from '../../context.js';
import type { DbOrTx } from '../../db/client.js';
import type { DocumentStream, EngineAttachment, SigningEngine } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import type { EnvelopeRow, EnvelopesRepo } from './envelopes.repo.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An attachment as the API lists it. */
export const attachmentOut = (a: EngineAttachment) => ({
  id: a.id,
  fieldId: a.fieldId,
  recipientEmail: a.recipientEmail,
  name: a.name,
  contentType: a.contentType as 'application/pdf' | 'image/png' | 'image/jpeg',
  size: a.size,
  sha256: a.sha256,
  uploadedAt: a.uploadedAt.toISOString(),
});

/**
 * The files signers attached to an envelope's FILE fields (issue 37), for its sender: listed, and
 * downloaded one at a time as a stream from the store. Scoped by the caller's customer and mode in the
 * query: another customer's envelope is 404. Reads only; free.
 */
export function createEnvelopeAttachments(deps: { repo: Pick<EnvelopesRepo, 'find'>; engine: Pick<SigningEngine, 'attachments' | 'openAttachment'> }) {
  async function requireEnvelope(db: DbOrTx, ctx: RequestContext, id: string): Promise<EnvelopeRow> {
    const envelope = UUID.test(id) ? await deps.repo.find(db, id, { customerId: ctx.actor.customerId, mode: ctx.actor.mode }) : undefined;
    if (!envelope) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
    return envelope;
  }

  return {
    async list(db: DbOrTx, ctx: RequestContext, id: string) {
      const envelope = await requireEnvelope(db, ctx, id);
      const rows = deps.engine.attachments ? await deps.engine.attachments(db, envelope.engineEnvelopeId) : [];
      return { envelopeId: envelope.id, attachments: rows.map(attachmentOut) };
    },

    async open(db: DbOrTx, ctx: RequestContext, id: string, attachmentId: string): Promise<DocumentStream & { attachment: ReturnType<typeof attachmentOut> }> {
      const envelope = await requireEnvelope(db, ctx, id);
      if (!UUID.test(attachmentId) || !deps.engine.openAttachment) throw new AppError('ATTACHMENT_NOT_FOUND', 'No such attachment on this envelope');
      if (envelope.purgedAt) throw new AppError('DOCUMENT_PURGED', 'The documents passed their retention date and were deleted');
      const opened = await deps.engine.openAttachment(db, envelope.engineEnvelopeId, attachmentId);
      if (!opened) throw new AppError('ATTACHMENT_NOT_FOUND', 'No such attachment on this envelope');
      return { stream: opened.stream, size: opened.size, attachment: attachmentOut(opened.attachment) };
    },
  };
}

export type EnvelopeAttachments = ReturnType<typeof createEnvelopeAttachments>;
