import type { RequestContext } from '../../context.js';
import type { Db, Tx } from '../../db/client.js';
import type { EnvelopeStatus, SigningEngine } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import { enqueueStatement } from '../../jobs/queue.js';
import type { AuditService } from '../audit/audit.service.js';
import type { BillingService } from '../billing/billing.service.js';
import { requireSignatureFields } from './envelope-plan.js';
import type { EnvelopeSync } from './envelope-sync.js';
import { DISTRIBUTE_JOB } from './envelopes.jobs.js';
import type { EnvelopeRow, EnvelopesRepo, StoredRecipientRow } from './envelopes.repo.js';
import type { TCreatePayload } from './envelopes.schemas.js';

export type EnvelopeSendDeps = {
  repo: EnvelopesRepo;
  engine: SigningEngine;
  sync: Pick<EnvelopeSync, 'syncFromEngine' | 'reconcile' | 'linksOf'>;
  billing: Pick<BillingService, 'charge' | 'quote'>;
  audit: AuditService;
  signingUrlsOf: (tx: Tx, engineRecipientIds: string[]) => Promise<Map<string, string>>;
  /** Creates and charges each gated recipient's verification (the service's gateRecipients). */
  gateRecipients: (tx: Tx, ctx: RequestContext, envelope: EnvelopeRow, recipients: StoredRecipientRow[]) => Promise<void>;
};

const distributeStatement = (envelopeId: string) => enqueueStatement([{ type: DISTRIBUTE_JOB, payload: { envelopeId }, dedupeKey: `distribute:${envelopeId}` }]);

/**
 * Sending an envelope: a draft's send (POST /send) and the distribution job (PENDING → SENT).
 *
 * A remote engine (Documenso) is never called inside a transaction (DESIGN §4.13): its call can take
 * seconds, and no rollback undoes it. Its send is recorded first (intent: charged, PENDING, the
 * distribution job queued, in the request's transaction), and the job distributes after the commit,
 * outside any transaction, then records the outcome in a short one. A distribute carried out whose
 * reply was lost is found done by the job's retry (the engine's send reads its state first), and the
 * send was charged exactly once, with its intent.
 */
export function createEnvelopeSend(deps: EnvelopeSendDeps) {
  const { repo, engine, sync } = deps;

  return {
    /** The envelope row must be locked by the caller, a DRAFT. */
    async send(tx: Tx, ctx: RequestContext, envelope: EnvelopeRow, meta: TCreatePayload['meta']) {
      const recipients = await repo.recipients(tx, [envelope.id]);
      requireSignatureFields(recipients, await repo.fields(tx, [envelope.id]), () => 'fields');
      // X-Service-Test-Mode is not honoured here (SPEC: create-and-send only); a test key still sends free.
      const billed = { actor: ctx.actor, operation: 'envelope_send' as const, testModeHeader: false };
      const quote = deps.billing.quote(billed);
      const charge = () => deps.billing.charge(tx, { ...billed, envelopeId: envelope.id, envelopeTitle: envelope.title });
      // Last, as on create, so the balance row is locked briefly; but first when a gated recipient's
      // verification (charged with the envelope) must exist before the invitations.
      const gated = recipients.some((r) => r.verificationRequired);
      const remote = engine.remote === true;
      if (gated || remote) await charge();
      if (gated) await deps.gateRecipients(tx, { ...ctx, testModeHeader: false }, envelope, recipients);
      // The send decides both the charge and where mail goes: a free (test) send never reaches a real mailbox.
      const testSend = quote.sandbox;
      const merged = meta ? { meta: { ...envelope.meta, ...meta } } : {};
      let status: EnvelopeStatus;
      if (remote) {
        // The intent: charged, PENDING, and the job that distributes once this commits.
        await repo.update(tx, envelope.id, { chargedMicros: quote.amountMicros, testSend, status: 'PENDING', ...merged });
        await tx.execute(distributeStatement(envelope.id));
        status = 'PENDING';
      } else {
        await repo.update(tx, envelope.id, { chargedMicros: quote.amountMicros, testSend, ...merged });
        const live = await engine.send(tx, envelope.engineEnvelopeId, { meta: meta ?? undefined, testSend });
        // The stored recipients read above are current: the engine's send changed only its own rows, under the lock.
        status = (await sync.reconcile(tx, { ...envelope, chargedMicros: quote.amountMicros }, { stored: recipients, live: live ?? undefined })).envelope.status as EnvelopeStatus;
      }
      await deps.audit.customer(tx, ctx, { action: 'envelope.send', resourceType: 'envelope', resourceId: envelope.id });
      const links = await deps.signingUrlsOf(tx, recipients.map((r) => r.engineRecipientId));
      if (!gated && !remote) await charge();
      return { envelopeId: envelope.id, status, recipients: recipients.map((r) => ({ name: r.name, email: r.email, signingUrl: links.get(r.engineRecipientId)! })) };
    },

    /**
     * The distribution job: PENDING → SENT, invitations out. Safe to run twice: a second run finds the
     * envelope sent and does nothing, so the job is marked done by the worker's next claim (the claim
     * that takes the invitations this queued), not by a statement of its own here. A remote engine is
     * called with no transaction open.
     */
    async distribute(db: Db, envelopeId: string): Promise<void> {
      if (engine.remote) {
        const envelope = await repo.findById(db, envelopeId);
        if (envelope?.status === 'PENDING') await engine.send(db, envelope.engineEnvelopeId, { meta: envelope.meta, testSend: envelope.testSend });
      }
      await db.transaction(async (tx) => {
        const envelope = await repo.findById(tx, envelopeId, true);
        if (envelope?.status === 'PENDING') {
          const live = engine.remote ? undefined : await engine.send(tx, envelope.engineEnvelopeId);
          await sync.syncFromEngine(tx, envelope, live ?? undefined);
        }
      });
    },
  };
}

export const requireDraft = (envelope: EnvelopeRow) => {
  if (envelope.status === 'CANCELLED') throw new AppError('ENVELOPE_CANCELLED', 'The envelope was cancelled');
  if (envelope.status !== 'DRAFT') throw new AppError('ALREADY_COMPLETED', `Only a DRAFT can be sent; this envelope is ${envelope.status}`);
};
