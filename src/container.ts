import { readFileSync } from 'node:fs';
import path from 'node:path';
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
import { createLocalEngine } from './engine/local/local-engine.js';
import { createLocalEngineRepo } from './engine/local/local-engine.repo.js';
import { createNotifier } from './engine/local/notifications.js';
import { createRecipientActions } from './engine/local/recipient-actions.js';
import { sealJob } from './engine/local/seal-job.js';
import { createTokenDeriver } from './engine/local/tokens.js';
import { distributeJob, envelopePeriodicTasks, refundJob, sendEmailJob } from './jobs/definitions/envelope-jobs.js';
import { createEnvelopesRepo } from './modules/envelopes/envelopes.repo.js';
import { createEnvelopesService } from './modules/envelopes/envelopes.service.js';
import { createSigningService } from './modules/signing/signing.service.js';
import { closePdfWorkers, prepareDocument } from './pdf/prepare.js';
import { sealDocument } from './pdf/seal.js';
import type { PreparedDocument } from './pdf/types.js';
import { loadSigner } from './providers/certs/signer.js';
import { createEmailProvider, createOutboxEmail, type EmailProvider } from './providers/email/index.js';
import { createLocalStorage, type BlobStorage } from './providers/storage/index.js';
import { deliverJob } from './modules/webhooks/delivery.js';
import { createWebhooksRepo } from './modules/webhooks/webhooks.repo.js';
import { createWebhooksService } from './modules/webhooks/webhooks.service.js';
import { postWebhook } from './webhooks/http-sender.js';
import { checkResolvable, parseWebhookUrl, type Resolver } from './webhooks/url-policy.js';

export const VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

export type ContainerOverrides = {
  database?: Database;
  logger?: Logger;
  jobs?: JobDefinition[];
  email?: EmailProvider;
  storage?: BlobStorage;
  /** DNS for webhook URLs (tests inject answers; the default asks the system resolver). */
  webhookResolver?: Resolver;
};

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

  // Envelopes and the built-in signing engine.
  const storage = overrides.storage ?? createLocalStorage(path.join(config.dataDir, 'blobs'));
  const outboxDir = path.join(config.dataDir, 'outbox');
  const email = overrides.email ?? createEmailProvider({ smtpUrl: config.smtpUrl, from: config.mailFrom, outboxDir });
  const outbox = createOutboxEmail(outboxDir, config.mailFrom);
  const notifier = createNotifier();
  const tokens = createTokenDeriver(config.jwtSecret);
  const localRepo = createLocalEngineRepo();
  const local = createLocalEngine({ repo: localRepo, storage, tokens, notifier, signingUrl: config.signingUrl });
  // Webhooks: the URL policy is checked at registration and again on the address each attempt dials.
  const webhookPolicy = {
    allowHosts: config.webhookAllowHosts,
    ownOrigins: [...new Set([config.publicUrl, config.signingUrl, config.dashboardUrl].map((u) => new URL(u).origin))],
    resolver: overrides.webhookResolver,
  };
  const webhooksRepo = createWebhooksRepo();
  const webhooks = createWebhooksService({
    repo: webhooksRepo,
    audit,
    checkUrl: async (raw) => {
      const { url } = parseWebhookUrl(raw, webhookPolicy);
      await checkResolvable(url, webhookPolicy);
      return url.toString();
    },
  });
  const envelopesRepo = createEnvelopesRepo();
  const envelopes = createEnvelopesService({
    repo: envelopesRepo,
    engine: local.engine,
    billing,
    audit,
    signingUrlOf: (engineRecipientId) => local.linkOf(Number(engineRecipientId)),
    envelopeExpiryDays: config.envelopeExpiryDays,
    storageExpiryDays: config.storageExpiryDays,
    publish: (tx, e) => webhooks.fanOut(tx, e),
  });
  const actions = createRecipientActions({ repo: localRepo, storage, tokens, notifier, local });
  const signing = createSigningService({ db, actions, envelopesRepo, envelopes, storage });
  // The sealing certificate is loaded once, on first use, and reused.
  let signer: ReturnType<typeof loadSigner> | undefined;
  const getSigner = () => (signer ??= loadSigner({ p12Path: config.signingCertP12Path, passphrase: config.signingCertPassphrase, dataDir: config.dataDir }));
  // `transfer` hands the upload's memory to the parsing worker instead of copying it (the route does not reuse the parts).
  const prepare = (parts: Uint8Array[]): Promise<PreparedDocument> => prepareDocument(parts, { timeoutMs: config.pdfParseTimeoutMs, maxMemoryMb: config.pdfParseMaxMemoryMb, transfer: true });

  const apiKeyCache = createApiKeyCache({ ttlMs: config.authCacheTtlMs });
  const stopKeyEvictions = await database.listen(API_KEYS_CHANNEL, (keyHash) => apiKeyCache.evict(keyHash));

  const worker = createWorker({
    database,
    jobs: [
      distributeJob({ db, envelopes }),
      sendEmailJob({ email, outbox, storage }),
      refundJob({ db, envelopes }),
      sealJob({
        db,
        repo: localRepo,
        storage,
        notifier,
        seal: async (input) => sealDocument({ ...input, signer: (await getSigner()).signer, tsaUrl: config.signingTsaUrl }),
        envelopeIdOf: async (engineEnvelopeId) => (await envelopesRepo.findByEngineId(db, engineEnvelopeId))?.id,
        lockEnvelope: async (tx, engineEnvelopeId) => {
          const envelope = await envelopesRepo.findByEngineId(tx, engineEnvelopeId, true);
          return envelope ? async () => void (await envelopes.syncFromEngine(tx, envelope)) : undefined;
        },
      }),
      deliverJob({
        db,
        repo: webhooksRepo,
        audit,
        scheduleMs: config.webhookRetryScheduleMs,
        disableAfter: config.webhookDisableAfter,
        send: (req) => postWebhook({ ...req, ...webhookPolicy, timeoutMs: config.webhookTimeoutMs }),
      }),
      ...(overrides.jobs ?? []),
    ],
    periodic: [...purgeTasks({ idempotency: repos.idempotency }), ...envelopePeriodicTasks({ envelopes })],
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
    storage,
    email,
    local,
    envelopesRepo,
    envelopes,
    webhooks,
    webhooksRepo,
    signing,
    getSigner,
    prepareDocument: prepare,
    commitMutation: createMutationRunner({ db, repo: repos.idempotency }),
    async close(): Promise<void> {
      await worker.stop();
      await stopKeyEvictions();
      await email.close();
      await closePdfWorkers();
      await database.close();
    },
  };
}

export type Container = Awaited<ReturnType<typeof createContainer>>;
