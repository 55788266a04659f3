import type { OperatorContext, RequestContext } from '../../context.js';
import type { Tx } from '../../db/client.js';
import type { EventDetails } from '../../db/schema/index.js';
import type { HandoverInput, SigningEngine } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import type { AuditService } from '../audit/audit.service.js';
import type { VerificationsService } from '../verifications/verifications.service.js';
import type { EnvelopeSync, PublishedEvent } from './envelope-sync.js';
import type { EnvelopeRow, EnvelopesRepo, StoredRecipientRow } from './envelopes.repo.js';
import { OPT_IN_EVENT_NAMES } from './events.js';
import type { HandoversStore } from './handovers.repo.js';
import { recipientOf, requireLive } from './recipient-links.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type HandoverDeps = {
  repo: Pick<EnvelopesRepo, 'find' | 'findByEngineId' | 'recipients'>;
  store: HandoversStore;
  engine: SigningEngine;
  sync: Pick<EnvelopeSync, 'syncFromEngine' | 'toDto'>;
  verifications: Pick<VerificationsService, 'createForRecipient' | 'cancelGates'>;
  audit: Pick<AuditService, 'customer' | 'operator'>;
  /** The webhook fan-out (envelope.recipient_replaced goes only to registrations that name it). */
  publish?: (tx: Tx, e: PublishedEvent) => Promise<void>;
};

export type Replaced = {
  envelopeId: string;
  recipient: { name: string; email: string; role: string; signingUrl: string };
  previous: { name: string; email: string };
  invitationSent: boolean;
  verificationId: string | null;
};

/**
 * A recipient's place passed to another person: the sender reassigns it (PATCH
 * /v1/envelopes/{id}/recipients/{recipient}), or the recipient delegates it from the signing page when
 * the envelope allows. The engine swaps the person and revokes the old link; here the stored copy
 * follows (the recipient row, the fields, the listed event with its particulars), a gated place gets a
 * new verification for the new address (charged like the first), and receivers that asked for
 * envelope.recipient_replaced are told. One transaction, under the envelope's lock.
 */
export function createRecipientHandover(deps: HandoverDeps) {
  const { repo, engine, sync, store } = deps;

  const unsupported = () => new AppError('NOT_SUPPORTED_BY_ENGINE', 'The documenso signing engine keeps its recipients itself: a recipient cannot be replaced or delegated here (cancel the envelope and send a new one)');

  async function apply(tx: Tx, envelope: EnvelopeRow, recipient: StoredRecipientRow, to: HandoverInput, chargeAs: RequestContext): Promise<Replaced> {
    const replaced = await engine.replaceRecipient!(tx, envelope.engineEnvelopeId, recipient.engineRecipientId, to);
    await store.replaceRecipient(tx, recipient.id, to);
    await store.moveFields(tx, envelope.id, recipient.email, to.email);
    const draft = envelope.status === 'DRAFT';
    let verificationId: string | null = null;
    if (recipient.verificationRequired && !draft) {
      // The old address's code can no longer unlock anything; the new address is verified afresh (a
      // draft's gate is created, and charged, at its send).
      await deps.verifications.cancelGates(tx, [recipient.engineRecipientId], 'recipient_replaced');
      ({ verificationId } = await deps.verifications.createForRecipient(tx, chargeAs, { envelopeId: envelope.id, engineRecipientId: recipient.engineRecipientId, email: to.email, name: to.name, expiresAt: envelope.expiresAt }));
    }
    if (!draft) {
      const details: EventDetails = { from: replaced.from, to: { name: to.name, email: to.email }, by: to.by, ...(to.reason ? { reason: to.reason } : {}) };
      const eventType = to.by === 'sender' ? 'RECIPIENT_REASSIGNED' : 'RECIPIENT_DELEGATED';
      const ev = await store.insertEvent(tx, { envelopeId: envelope.id, eventType, recipientEmail: to.email, details });
      // The engine marked the new person invited: the stored copy follows, as after any engine change.
      const synced = await sync.syncFromEngine(tx, envelope);
      await deps.publish?.(tx, {
        owner: { customerId: envelope.customerId, mode: envelope.mode },
        envelopeId: envelope.id,
        eventId: ev.id,
        event: OPT_IN_EVENT_NAMES[eventType],
        occurredAt: ev.occurredAt,
        payload: async () => {
          const [dto] = await sync.toDto(tx, [synced], false);
          return { envelope: { ...dto, handover: { ...details, at: ev.occurredAt.toISOString() } }, recipient: dto.recipients.find((r) => r.email === to.email) ?? null };
        },
      });
    }
    return {
      envelopeId: envelope.id,
      recipient: { name: to.name, email: to.email, role: recipient.role, signingUrl: replaced.signingUrl },
      previous: replaced.from,
      invitationSent: replaced.invited,
      verificationId,
    };
  }

  return {
    /** The sender replaces a recipient who has not acted; on a DRAFT it is a plain edit. */
    async reassign(tx: Tx, ctx: RequestContext, id: string, ref: string, input: { name?: string; email?: string }): Promise<Replaced> {
      if (!engine.replaceRecipient) throw unsupported();
      let envelope = UUID.test(id) ? await repo.find(tx, id, { customerId: ctx.actor.customerId, mode: ctx.actor.mode }, true) : undefined;
      if (!envelope) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
      requireLive(envelope);
      // The engine is authoritative: an action not yet in the copy (a signature a moment ago) counts.
      if (envelope.status !== 'DRAFT') requireLive((envelope = await sync.syncFromEngine(tx, envelope)));
      const recipient = recipientOf(await repo.recipients(tx, [envelope.id]), ref);
      if (recipient.signingStatus !== 'NOT_SIGNED') throw new AppError('ALREADY_ACTED', `${recipient.email} has already ${recipient.signingStatus === 'REJECTED' ? 'declined' : 'acted'}: they cannot be replaced`);
      const to = { name: input.name ?? recipient.name, email: input.email ?? recipient.email };
      if (to.name === recipient.name && to.email.toLowerCase() === recipient.email.toLowerCase()) {
        throw new AppError('VALIDATION_ERROR', 'body: the name and email are the recipient\'s already; give a new name or email', { details: [{ path: 'body', message: 'nothing to change' }] });
      }
      const done = await apply(tx, envelope, recipient, { ...to, by: 'sender' }, ctx);
      await deps.audit.customer(tx, ctx, { action: 'envelope.recipient.reassign', resourceType: 'envelope', resourceId: envelope.id, metadata: { from: recipient.email, to: to.email, invited: done.invitationSent } });
      return done;
    },

    /**
     * A recipient hands their place to someone else (the signing page). `check` runs under the
     * envelope's lock and answers the delegator's engine recipient id once the engine-side rules
     * passed (allowed, not acted, the envelope active); the charge of a gated place's new
     * verification goes to the envelope's account.
     */
    async delegate(tx: Tx, engineEnvelopeId: string, check: () => Promise<string>, to: Omit<HandoverInput, 'by'> & { client: { ip: string; userAgent: string | null } }): Promise<Replaced> {
      if (!engine.replaceRecipient) throw unsupported();
      const locked = await repo.findByEngineId(tx, engineEnvelopeId, true);
      if (!locked) throw new AppError('SIGNING_LINK_INVALID', 'This signing link is not valid');
      const engineRecipientId = await check();
      const envelope = await sync.syncFromEngine(tx, locked);
      const recipient = (await repo.recipients(tx, [envelope.id])).find((r) => r.engineRecipientId === engineRecipientId);
      if (!recipient) throw new AppError('SIGNING_LINK_INVALID', 'This signing link is not valid');
      const ctx: RequestContext = { actor: { customerId: envelope.customerId, mode: envelope.mode, via: 'signing_link', keyId: null }, requestId: 'delegation', ip: to.client.ip, testModeHeader: false };
      const done = await apply(tx, envelope, recipient, { ...to, by: 'recipient' }, ctx).catch((err: unknown) => {
        // The account cannot pay the delegate's verification: the recipient is told to ask the sender.
        if (err instanceof AppError && ['INSUFFICIENT_BALANCE', 'INSUFFICIENT_CREDITS', 'SANDBOX_LIMIT_REACHED'].includes(err.code)) {
          throw new AppError('DELEGATION_NOT_ALLOWED', 'This document cannot be handed on right now; ask the sender to reassign it');
        }
        throw err;
      });
      const op: OperatorContext = { actorType: 'system', requestId: null, ip: to.client.ip };
      await deps.audit.operator(tx, op, { customerId: envelope.customerId, action: 'envelope.recipient.delegate', resourceType: 'envelope', resourceId: envelope.id, metadata: { from: recipient.email, to: to.email, invited: done.invitationSent } });
      return done;
    },
  };
}

export type RecipientHandover = ReturnType<typeof createRecipientHandover>;
