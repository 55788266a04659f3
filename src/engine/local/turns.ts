import type { RecipientRow } from './local-engine.repo.js';

/** Roles that act on the document; the others only view (VIEWER), receive copies (CC) or nothing (ASSISTANT). */
export const ACTING_ROLES = new Set(['SIGNER', 'APPROVER']);

const phase = (r: RecipientRow) => (r.role === 'APPROVER' ? 0 : 1);

/**
 * Who may act now. Approvers act before any signer is notified. With a signing order, only the lowest
 * pending order acts (equal orders act together); without one, everyone in the phase acts at once.
 */
export function currentTurn(recipients: RecipientRow[]): RecipientRow[] {
  const sequential = recipients.some((r) => r.signingOrder !== null);
  const pending = recipients.filter((r) => ACTING_ROLES.has(r.role) && r.status === 'PENDING');
  if (pending.length === 0) return [];
  const key = (r: RecipientRow) => phase(r) * 1e9 + (sequential ? (r.signingOrder ?? 1e8) : 0);
  const first = Math.min(...pending.map(key));
  return pending.filter((r) => key(r) === first);
}

/** Whether every SIGNER has signed: the document can be sealed. */
export const allSignersSigned = (recipients: RecipientRow[]) => recipients.filter((r) => r.role === 'SIGNER').every((r) => r.status === 'SIGNED');
