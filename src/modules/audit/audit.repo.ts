import { and, count, desc, eq, gte, sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { executePrepared } from '../../db/prepared.js';
import { auditLog, operatorAlerts } from '../../db/schema/index.js';

export type AuditEntry = {
  customerId: string | null;
  actorType: string;
  actorId: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  requestId: string | null;
  ip: string | null;
  metadata?: Record<string, unknown>;
};

export type AlertInput = {
  kind: string;
  message: string;
  customerId?: string | null;
  resourceType?: string | null;
  resourceId?: string | null;
  data?: Record<string, unknown>;
};

/**
 * The INSERT of one audit row: `insert` runs it alone; a hot write runs it inside its own statement
 * (a CTE) to save a round trip.
 */
function insertStatement(e: AuditEntry): SQL {
  return sql`
    INSERT INTO audit_log (customer_id, actor_type, actor_id, action, resource_type, resource_id, request_id, ip, metadata)
    VALUES (${e.customerId}, ${e.actorType}, ${e.actorId}, ${e.action}, ${e.resourceType}, ${e.resourceId}, ${e.requestId}, ${e.ip}, ${e.metadata === undefined ? null : JSON.stringify(e.metadata)}::jsonb)`;
}

export function createAuditRepo() {
  return {
    async insert(tx: DbOrTx, entry: AuditEntry): Promise<void> {
      await executePrepared(tx, insertStatement(entry));
    },

    insertStatement,

    /** How many times a customer did `action` since `since` (a bound on acts that cost storage). */
    async countSince(tx: DbOrTx, customerId: string, action: string, since: Date): Promise<number> {
      const [{ n }] = await tx.select({ n: count() }).from(auditLog).where(and(eq(auditLog.customerId, customerId), eq(auditLog.action, action), gte(auditLog.createdAt, since)));
      return Number(n);
    },

    async list(tx: DbOrTx, filter: { customerId?: string }, page: { limit: number; offset: number }) {
      const where = filter.customerId ? eq(auditLog.customerId, filter.customerId) : undefined;
      const [rows, [{ total }]] = await Promise.all([
        tx.select().from(auditLog).where(where).orderBy(desc(auditLog.id)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(auditLog).where(where),
      ]);
      return { rows, total };
    },

    async insertAlert(tx: DbOrTx, alert: AlertInput): Promise<void> {
      await tx.insert(operatorAlerts).values(alert);
    },

    async listAlerts(tx: DbOrTx, page: { limit: number; offset: number }) {
      const [rows, [{ total }]] = await Promise.all([
        tx.select().from(operatorAlerts).orderBy(desc(operatorAlerts.id)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(operatorAlerts),
      ]);
      return { rows, total };
    },
  };
}

export type AuditRepo = ReturnType<typeof createAuditRepo>;
