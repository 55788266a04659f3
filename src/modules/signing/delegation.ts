import { blockedReason, verificationRequired } from '../../engine/local/recipient-actions.js';
import type { DocumentRow, RecipientRow } from '../../engine/local/local-engine.repo.js';
import { AppError } from '../../errors.js';

type Ctx = { doc: DocumentRow; me: RecipientRow; recipients: RecipientRow[] };

/**
 * Why this recipient cannot hand the document on now, or null when they can: the sender allowed it
 * (allowDelegation), the document is out, and they may still act (their turn, or waiting for it, as
 * declining early is allowed). A gated recipient proves their address first: before the code, whoever
 * holds the link is not known to be them.
 */
function refusal(ctx: Ctx): AppError | null {
  const { doc, me, recipients } = ctx;
  if (doc.status === 'DRAFT') return new AppError('SIGNING_LINK_INVALID', 'This envelope has not been sent yet');
  if (doc.meta.allowDelegation !== true) return new AppError('DELEGATION_NOT_ALLOWED', 'The sender did not allow this document to be handed to someone else; decline it or contact the sender');
  const reason = blockedReason(doc, me, recipients);
  if (reason === null || reason === 'waiting') return null;
  if (reason === 'signed' || reason === 'rejected') return new AppError('ALREADY_ACTED', 'You have already acted on this envelope');
  if (reason === 'verification_required') return verificationRequired();
  if (reason === 'view_only') return new AppError('DELEGATION_NOT_ALLOWED', 'Your role on this envelope is view-only: there is nothing to hand on');
  return new AppError('ENVELOPE_NOT_ACTIVE', `The envelope is ${reason}`);
}

export const canDelegate = (doc: DocumentRow, me: RecipientRow, recipients: RecipientRow[]) => refusal({ doc, me, recipients }) === null;

/** Throws why the recipient cannot hand the document to `email`; the engine then checks the rest (the address, the bounds). */
export function assertCanDelegate(ctx: Ctx, email: string): void {
  const refused = refusal(ctx);
  if (refused) throw refused;
  if (ctx.me.email.toLowerCase() === email.toLowerCase()) throw new AppError('RECIPIENT_EMAIL_TAKEN', 'That is your own address: name the person who should handle this document');
}
