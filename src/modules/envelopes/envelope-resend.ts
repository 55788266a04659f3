import type { Db, Tx } from '../../db/client.js';
import type { SigningEngine } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import type { EnvelopeSync } from './envelope-sync.js';
import type { EnvelopeRow, EnvelopesRepo, Owner, StoredRecipientRow } from './envelopes.repo.js';

export type Reminded = { name: string; email: string }[];

/** Whether an envelope has reminders to send: the rules of POST /resend, on its stored copy. */
export function requireRemindable(envelope: EnvelopeRow, recipients: StoredRecipientRow[]) {
  if (envelope.status === 'COMPLETED') throw new AppError('ENVELOPE_ALREADY_COMPLETE', 'The envelope is completed');
  if (envelope.status === 'CANCELLED') throw new AppError('ENVELOPE_CANCELLED', 'The envelope was cancelled');
  const acting = recipients.filter((r) => r.role === 'SIGNER' || r.role === 'APPROVER');
  if (acting.every((r) => r.signingStatus === 'SIGNED')) throw new AppError('ALL_SIGNED', 'Every recipient has signed');
  // Before distribution there is nothing to remind of (the invitation itself is still to come).
  if (!['SENT', 'PARTIALLY_SIGNED'].includes(envelope.status)) throw new AppError('INVALID_STATE', `Nothing to remind: the envelope is ${envelope.status}`);
}

/**
 * A remote engine's resend (DESIGN §4.13): the copy is read in step with the engine and the reminders
 * sent with no transaction open; the request's transaction then records only the audit entry.
 * Undefined for an engine that sends in the caller's transaction (the local engine).
 */
export function createRemoteResend(deps: { repo: EnvelopesRepo; engine: SigningEngine; sync: Pick<EnvelopeSync, 'readInStep'> }) {
  const { repo, engine, sync } = deps;
  return async function remindOutside(db: Db, id: string, owner: Owner, lock: (tx: Tx) => Promise<EnvelopeRow>): Promise<Reminded | undefined> {
    if (!engine.remote) return undefined;
    const copy = await repo.findWithRecipients(db, id, owner);
    if (!copy) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
    const { envelope, recipients } = await sync.readInStep(db, copy, lock);
    requireRemindable(envelope, recipients);
    // Reminders carry no state to record: repeated, they remind again, as a second POST /resend would.
    return engine.resend(db, envelope.engineEnvelopeId);
  };
}
