import type { RequestContext } from '../../context.js';
import type { Tx } from '../../db/client.js';
import type { SigningEngine } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import type { AuditService } from '../audit/audit.service.js';
import type { EnvelopeRow, EnvelopesRepo, StoredRecipientRow } from './envelopes.repo.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `{recipient}` in a path: the recipient's position (1-based, the order of `recipients`, as r1, r2 in markers) or their email. */
export function recipientOf(recipients: StoredRecipientRow[], ref: string): StoredRecipientRow {
  const found = /^\d{1,3}$/.test(ref) ? recipients.find((r) => r.position === Number(ref)) : recipients.find((r) => r.email.toLowerCase() === ref.toLowerCase());
  if (!found) throw new AppError('RECIPIENT_NOT_FOUND', `No recipient ${ref} on this envelope: name one by its position in recipients (1, 2, …) or its email`);
  return found;
}

/** Once it ended a link opens nothing to act on, and a new invitation would invite to nothing. */
export function requireLive(envelope: EnvelopeRow): void {
  if (envelope.status === 'COMPLETED') throw new AppError('ENVELOPE_ALREADY_COMPLETE', 'The envelope is completed');
  if (envelope.status === 'CANCELLED') throw new AppError('ENVELOPE_CANCELLED', 'The envelope was cancelled');
  if (envelope.status === 'REJECTED' || envelope.status === 'EXPIRED' || envelope.expiresAt.getTime() <= Date.now()) {
    throw new AppError('INVALID_STATE', `The envelope is ${envelope.status === 'REJECTED' ? 'rejected' : 'expired'}; its links open nothing to sign`);
  }
}

/**
 * A recipient's signing link, revoked and reissued by the sender (a link forwarded or leaked): the old
 * one stops working at the commit, and the new one is emailed to whoever had the old one by email and
 * still has to act. The envelope's state is untouched and nothing is charged.
 */
export function createRecipientLinks(deps: { repo: Pick<EnvelopesRepo, 'find' | 'recipients'>; engine: SigningEngine; audit: Pick<AuditService, 'customer'> }) {
  return {
    async reissue(tx: Tx, ctx: RequestContext, id: string, ref: string) {
      if (!deps.engine.reissueLink) throw new AppError('NOT_SUPPORTED_BY_ENGINE', 'The documenso signing engine keeps the signing links itself: a link cannot be revoked here (cancel the envelope to stop every link)');
      const envelope = UUID.test(id) ? await deps.repo.find(tx, id, { customerId: ctx.actor.customerId, mode: ctx.actor.mode }, true) : undefined;
      if (!envelope) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
      requireLive(envelope);
      const recipient = recipientOf(await deps.repo.recipients(tx, [envelope.id]), ref);
      // A signed or declined recipient's link only shows what they did: a new one would protect nothing.
      if (recipient.signingStatus !== 'NOT_SIGNED') throw new AppError('ALREADY_ACTED', `${recipient.email} has already ${recipient.signingStatus === 'REJECTED' ? 'declined' : 'acted'}: their link cannot be reissued`);
      const { signingUrl, invited } = await deps.engine.reissueLink(tx, envelope.engineEnvelopeId, recipient.engineRecipientId);
      await deps.audit.customer(tx, ctx, { action: 'envelope.link.reissue', resourceType: 'envelope', resourceId: envelope.id, metadata: { recipient: recipient.email, invited } });
      return {
        envelopeId: envelope.id,
        recipient: { name: recipient.name, email: recipient.email, role: recipient.role, signingUrl },
        invitationSent: invited,
      };
    },
  };
}

export type RecipientLinks = ReturnType<typeof createRecipientLinks>;
