import type { SigningEngine } from './engine/engine.js';
import type { AuditService } from './modules/audit/audit.service.js';
import { createFieldEdits, type FieldDto } from './modules/envelopes/field-edits.js';
import type { EnvelopesRepo } from './modules/envelopes/envelopes.repo.js';
import { createRecipientLinks } from './modules/envelopes/recipient-links.js';

/** The composition root's sender tools on a live or draft envelope: link reissue, and the field editor's saves. */
export function createEnvelopeEditing(deps: { repo: EnvelopesRepo; engine: SigningEngine; audit: AuditService; fieldDto: FieldDto }) {
  return {
    recipientLinks: createRecipientLinks({ repo: deps.repo, engine: deps.engine, audit: deps.audit }),
    fieldEdits: createFieldEdits(deps),
  };
}
