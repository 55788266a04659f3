import { bigserial, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/** Written in the same transaction as the mutation it records; read only through the operator API. */
export const auditLog = pgTable(
  'audit_log',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    customerId: uuid('customer_id'),
    /** api_key | wallet | session | operator | s2s | system */
    actorType: text('actor_type').notNull(),
    actorId: text('actor_id'),
    action: text('action').notNull(),
    resourceType: text('resource_type').notNull(),
    resourceId: text('resource_id'),
    requestId: text('request_id'),
    ip: text('ip'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('audit_customer_created_idx').on(t.customerId, t.createdAt)],
);

export const operatorAlerts = pgTable(
  'operator_alerts',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    kind: text('kind').notNull(),
    message: text('message').notNull(),
    customerId: uuid('customer_id'),
    resourceType: text('resource_type'),
    resourceId: text('resource_id'),
    data: jsonb('data').$type<Record<string, unknown>>(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('operator_alerts_created_idx').on(t.createdAt)],
);
