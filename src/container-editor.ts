import type { SigningEngine } from './engine/engine.js';
import type { AuditService } from './modules/audit/audit.service.js';
import { createFieldEdits, type FieldDto } from './modules/envelopes/field-edits.js';
import type { EnvelopesRepo } from './modules/envelopes/envelopes.repo.js';
import { createRecipientLinks } from './modules/envelopes/recipient-links.js';
import { createHandoversStore } from './modules/envelopes/handovers.repo.js';
import { createRecipientHandover, type HandoverDeps } from './modules/envelopes/recipient-handover.js';
import { createEnvelopeAttachments } from './modules/envelopes/envelope-attachments.js';
import { createPrepareLinksRepo } from './modules/editor/prepare-links.repo.js';
import { createPrepareLinks } from './modules/editor/prepare-links.service.js';

/** The composition root's sender tools on a live or draft envelope: link reissue, reassignment and delegation, the field editor's saves, its prepare links, and signers' attachments. */
export function createEnvelopeEditing(deps: { repo: EnvelopesRepo; engine: SigningEngine; audit: AuditService; fieldDto: FieldDto; secret: string; publicUrl: string; now: () => Date } & Pick<HandoverDeps, 'sync' | 'verifications' | 'publish'>) {
  return {
    recipientHandover: createRecipientHandover({ repo: deps.repo, store: createHandoversStore(), engine: deps.engine, sync: deps.sync, verifications: deps.verifications, audit: deps.audit, publish: deps.publish }),
    recipientLinks: createRecipientLinks({ repo: deps.repo, engine: deps.engine, audit: deps.audit }),
    envelopeAttachments: createEnvelopeAttachments({ repo: deps.repo, engine: deps.engine }),
    fieldEdits: createFieldEdits(deps),
    prepareLinks: createPrepareLinks({ repo: createPrepareLinksRepo(), envelopes: deps.repo, audit: deps.audit, secret: deps.secret, publicUrl: deps.publicUrl, now: deps.now }),
  };
}
