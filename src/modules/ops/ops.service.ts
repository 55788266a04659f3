import type { DbOrTx, Tx } from '../../db/client.js';
import type { OperatorContext, Paging } from '../../context.js';
import { AppError } from '../../errors.js';
import { requeueDead } from '../../jobs/queue.js';
import { centsToMicros, microsToCents } from '../../lib/money.js';
import type { AccountRepo } from '../account/account.repo.js';
import { generateApiKey } from '../account/api-keys.js';
import type { AuditRepo } from '../audit/audit.repo.js';
import type { AuditService } from '../audit/audit.service.js';
import type { BillingService } from '../billing/billing.service.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function createOpsService(deps: {
  accounts: AccountRepo;
  billing: Pick<BillingService, 'credit'>;
  audit: AuditService;
  auditRepo: AuditRepo;
  sandboxLimit: number;
}) {
  const { accounts, audit } = deps;

  async function issueKey(tx: Tx, customerId: string, mode: 'live' | 'test') {
    const k = generateApiKey(mode);
    const row = await accounts.insertApiKey(tx, { customerId, mode, keyHash: k.keyHash, prefix: k.prefix });
    return { apiKey: k.key, keyId: row.id, mode, prefix: k.prefix };
  }

  async function requireCustomer(db: DbOrTx, id: string) {
    const customer = await accounts.findCustomer(db, id);
    if (!customer) throw new AppError('CUSTOMER_NOT_FOUND', 'No such customer');
    return customer;
  }

  return {
    /** A customer with a live and a test key, and an opening credit when one is given. */
    async createCustomer(tx: Tx, ctx: OperatorContext, input: { email: string; name: string; creditCents?: number }) {
      // The operator vouches for the address: a sign-in that proves it reaches this account.
      const customer = await accounts.insertCustomer(tx, { email: input.email, emailVerified: true, name: input.name, sandboxLimit: deps.sandboxLimit });
      const live = await issueKey(tx, customer.id, 'live');
      const test = await issueKey(tx, customer.id, 'test');
      if (input.creditCents) {
        await deps.billing.credit(tx, { customerId: customer.id, micros: centsToMicros(input.creditCents), direction: 'credit', description: 'Opening credit' });
      }
      await audit.operator(tx, ctx, { customerId: customer.id, action: 'customer.create', resourceType: 'customer', resourceId: customer.id, metadata: { creditCents: input.creditCents ?? 0 } });
      return { customerId: customer.id, apiKey: live.apiKey, testApiKey: test.apiKey };
    },

    async getCustomer(db: DbOrTx, id: string) {
      const customer = await requireCustomer(db, id);
      const keys = await accounts.listKeys(db, id);
      return {
        customerId: customer.id,
        email: customer.email,
        name: customer.name,
        creditsCents: microsToCents(customer.balanceMicros),
        balanceMicros: Number(customer.balanceMicros),
        sandboxUsed: customer.sandboxUsed,
        sandboxLimit: customer.sandboxLimit,
        createdAt: customer.createdAt.toISOString(),
        apiKeys: keys.map((k) => ({ keyId: k.id, prefix: k.prefix, mode: k.mode, createdAt: k.createdAt.toISOString(), revokedAt: iso(k.revokedAt) })),
      };
    },

    async addCredits(tx: Tx, ctx: OperatorContext, customerId: string, input: { amountCents: number; reason: string }) {
      await requireCustomer(tx, customerId);
      const { balanceMicros, entry } = await deps.billing.credit(tx, { customerId, micros: centsToMicros(input.amountCents), direction: 'credit', description: input.reason });
      await audit.operator(tx, ctx, { customerId, action: 'credits.add', resourceType: 'ledger_entry', resourceId: entry.id, metadata: { amountCents: input.amountCents, reason: input.reason } });
      return { creditsCents: microsToCents(balanceMicros) };
    },

    async createApiKey(tx: Tx, ctx: OperatorContext, customerId: string, mode: 'live' | 'test') {
      await requireCustomer(tx, customerId);
      const key = await issueKey(tx, customerId, mode);
      await audit.operator(tx, ctx, { customerId, action: 'api_key.create', resourceType: 'api_key', resourceId: key.keyId, metadata: { mode } });
      return key;
    },

    async revokeApiKey(tx: Tx, ctx: OperatorContext, customerId: string, keyId: string) {
      const row = await accounts.revokeKey(tx, customerId, keyId);
      if (!row) throw new AppError('API_KEY_NOT_FOUND', 'No such API key for this customer');
      await audit.operator(tx, ctx, { customerId, action: 'api_key.revoke', resourceType: 'api_key', resourceId: keyId });
      return { keyHash: row.keyHash, body: { keyId: row.id, prefix: row.prefix, revokedAt: row.revokedAt!.toISOString() } };
    },

    async listAudit(db: DbOrTx, filter: { customerId?: string }, paging: Paging) {
      const { rows, total } = await deps.auditRepo.list(db, filter, paging);
      return { total, rows: rows.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() })) };
    },

    /**
     * Queues a dead job again with its attempts reset (a dead seal, refund, delivery...): the answer
     * to a job_dead alert once its cause is fixed. Handlers are safe to run twice.
     */
    async retryJob(tx: Tx, ctx: OperatorContext, jobId: number) {
      const found = await requeueDead(tx, jobId);
      if (!found) throw new AppError('JOB_NOT_FOUND', 'No such job');
      if (!found.requeued) throw new AppError('JOB_NOT_DEAD', `Only a dead job can be queued again; this one is ${found.job.status}`);
      await audit.operator(tx, ctx, { action: 'job.retry', resourceType: 'job', resourceId: String(jobId), metadata: { type: found.job.type } });
      return { jobId: found.job.id, type: found.job.type, status: found.job.status };
    },

    async listAlerts(db: DbOrTx, paging: Paging) {
      const { rows, total } = await deps.auditRepo.listAlerts(db, paging);
      return { total, rows: rows.map((r) => ({ ...r, createdAt: r.createdAt.toISOString() })) };
    },
  };
}

export type OpsService = ReturnType<typeof createOpsService>;
