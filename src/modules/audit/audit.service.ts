import type { SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import type { OperatorContext, RequestContext } from '../../context.js';
import type { AlertInput, AuditEntry, AuditRepo } from './audit.repo.js';

export type AuditRecord = { action: string; resourceType: string; resourceId?: string | null; customerId?: string | null; metadata?: Record<string, unknown> };

const customerEntry = (ctx: RequestContext, rec: AuditRecord): AuditEntry => ({
  customerId: ctx.actor.customerId,
  actorType: ctx.actor.via,
  actorId: ctx.actor.keyId ?? ctx.actor.walletAddress ?? null,
  action: rec.action,
  resourceType: rec.resourceType,
  resourceId: rec.resourceId ?? null,
  requestId: ctx.requestId,
  ip: ctx.ip,
  metadata: { mode: ctx.actor.mode, ...rec.metadata },
});

/** Audit rows are written inside the mutation's transaction: no mutation without its row, and no row without it. */
export function createAuditService(deps: { repo: AuditRepo }) {
  return {
    async customer(tx: DbOrTx, ctx: RequestContext, rec: AuditRecord): Promise<void> {
      await deps.repo.insert(tx, customerEntry(ctx, rec));
    },

    /** `customer`'s row as a statement, for a caller that writes it inside its own (see the audit repo). */
    customerStatement: (ctx: RequestContext, rec: AuditRecord): SQL => deps.repo.insertStatement(customerEntry(ctx, rec)),

    async operator(tx: DbOrTx, ctx: OperatorContext, rec: AuditRecord): Promise<void> {
      await deps.repo.insert(tx, {
        customerId: rec.customerId ?? null,
        actorType: ctx.actorType,
        actorId: null,
        action: rec.action,
        resourceType: rec.resourceType,
        resourceId: rec.resourceId ?? null,
        requestId: ctx.requestId,
        ip: ctx.ip,
        metadata: rec.metadata,
      });
    },

    async alert(tx: DbOrTx, alert: AlertInput): Promise<void> {
      await deps.repo.insertAlert(tx, alert);
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
