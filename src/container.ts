import { readFileSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import type { Config } from './config.js';
import { openDatabase, type Database } from './db/client.js';
import { API_KEYS_CHANNEL, createApiKeyCache } from './http/api-key-cache.js';
import { createIdempotencyRepo } from './http/idempotency.repo.js';
import { createMutationRunner } from './http/idempotency.js';
import { purgeTasks } from './jobs/definitions/purge.js';
import { createWorker, type JobDefinition } from './jobs/worker.js';
import { createAccountRepo } from './modules/account/account.repo.js';
import { createAccountService } from './modules/account/account.service.js';
import { createAuditRepo } from './modules/audit/audit.repo.js';
import { createAuditService } from './modules/audit/audit.service.js';
import { createBillingRepo } from './modules/billing/billing.repo.js';
import { createBillingService } from './modules/billing/billing.service.js';
import { createOpsService } from './modules/ops/ops.service.js';

export const VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

export type ContainerOverrides = { database?: Database; logger?: Logger; jobs?: JobDefinition[] };

/** The composition root: the only place that knows every concrete implementation. */
export async function createContainer(config: Config, overrides: ContainerOverrides = {}) {
  const logger = overrides.logger ?? pino({ level: config.logLevel });
  const database =
    overrides.database ?? (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.databasePoolSize }));
  const { db } = database;

  const repos = {
    accounts: createAccountRepo(),
    billing: createBillingRepo(),
    audit: createAuditRepo(),
    idempotency: createIdempotencyRepo(),
  };
  const audit = createAuditService({ repo: repos.audit });
  const billing = createBillingService({ repo: repos.billing, topUpUrl: `${config.dashboardUrl}/billing` });
  const services = {
    audit,
    billing,
    account: createAccountService({ accounts: repos.accounts, billing: repos.billing }),
    ops: createOpsService({ accounts: repos.accounts, billing, audit, auditRepo: repos.audit, sandboxLimit: config.sandboxLimit }),
  };

  const apiKeyCache = createApiKeyCache({ ttlMs: config.authCacheTtlMs });
  const stopKeyEvictions = await database.listen(API_KEYS_CHANNEL, (keyHash) => apiKeyCache.evict(keyHash));

  const worker = createWorker({
    database,
    jobs: [...(overrides.jobs ?? [])],
    periodic: purgeTasks({ idempotency: repos.idempotency }),
    concurrency: config.workerConcurrency,
    leaseMs: config.jobLeaseMs,
    intervalMs: config.schedulerIntervalMs,
    logger: logger.child({ component: 'worker' }),
  });

  return {
    config,
    logger,
    database,
    db,
    repos,
    services,
    worker,
    version: VERSION,
    apiKeyCache,
    commitMutation: createMutationRunner({ db, repo: repos.idempotency }),
    async close(): Promise<void> {
      await worker.stop();
      await stopKeyEvictions();
      await database.close();
    },
  };
}

export type Container = Awaited<ReturnType<typeof createContainer>>;
