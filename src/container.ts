import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { stdoutLogDestination } from './lib/log-destination.js';
import type { Config } from './config.js';
import { openDatabase, type Database, type DbOrTx } from './db/client.js';
import { API_KEYS_CHANNEL, createApiKeyCache } from './modules/account/api-key-cache.js';
import { createIdempotencyRepo } from './http/idempotency.repo.js';
import { createMutationRunner, idempotencyPurgeTask } from './http/idempotency.js';
import { createIdempotency } from './http/idempotency-core.js';
import { createWorker, type JobDefinition, type PeriodicTask } from './jobs/worker.js';
import { createAccountRepo } from './modules/account/account.repo.js';
import { createAccountService } from './modules/account/account.service.js';
import { createProductsRepo } from './modules/account/products.repo.js';
import { createProductsService } from './modules/account/products.service.js';
import { createApiKeysService } from './modules/account/api-keys.service.js';
import { createSummaryRepo } from './modules/account/summary.repo.js';
import { createSummaryService } from './modules/account/summary.service.js';
import { sendSignInLinkJob, signInPeriodicTasks } from './modules/dashboard/sign-in.jobs.js';
import { authPeriodicTasks } from './modules/auth/auth.jobs.js';
import { createAuthRepo } from './modules/auth/auth.repo.js';
import { createAuthService } from './modules/auth/auth.service.js';
import { createWalletTokens } from './modules/auth/wallet-jwt.js';
import { x402PeriodicTasks, x402SweepJob } from './modules/x402/x402.jobs.js';
import { createAuditRepo } from './modules/audit/audit.repo.js';
import { createAuditService } from './modules/audit/audit.service.js';
import { createBillingRepo } from './modules/billing/billing.repo.js';
import { createBillingService } from './modules/billing/billing.service.js';
import { createOpsService } from './modules/ops/ops.service.js';
import { createMetrics } from './modules/ops/metrics.js';
import { createLocalEngine } from './engine/local/local-engine.js';
import { createLocalEngineRepo } from './engine/local/local-engine.repo.js';
import { createNotifier } from './engine/local/notifications.js';
import { createRecipientActions } from './engine/local/recipient-actions.js';
import { blobSweepJob, blobSweepTask, engineBlobOwner } from './engine/local/blob-sweep.js';
import { storeMaintenance } from './db/pglite-maintenance.js';
import { createDocumentViews } from './engine/local/document-views.js';
import { purgeDocumentJob } from './engine/local/purge-job.js';
import { sealJob } from './engine/local/seal-job.js';
import { createSealedDocumentsRepo } from './engine/local/sealed-documents.repo.js';
import { createTokenDeriver } from './engine/local/tokens.js';
import { sendEmailJob } from './engine/local/send-email-job.js';
import { refundJob } from './modules/billing/billing.jobs.js';
import { createRefundsRepo } from './modules/billing/refunds.repo.js';
import { createRefundsService } from './modules/billing/refunds.service.js';
import { createWalletRefundsRepo } from './modules/billing/wallet-refunds.repo.js';
import { createEnvelopeSync } from './modules/envelopes/envelope-sync.js';
import { createSenderNotices, senderNoticeJob } from './modules/envelopes/sender-notices.js';
import { createEnvelopeReminders, distributeJob, envelopePeriodicTasks, remoteSweepJobs } from './modules/envelopes/envelopes.jobs.js';
import { createEnvelopesRepo } from './modules/envelopes/envelopes.repo.js';
import { createEnvelopesService } from './modules/envelopes/envelopes.service.js';
import { createEnvelopeEditing } from './container-editor.js';
import { createSigningService } from './modules/signing/signing.service.js';
import { deleteDocumentJob, templateBlobOwner } from './modules/templates/templates.jobs.js';
import { createTemplatesRepo } from './modules/templates/templates.repo.js';
import { createTemplatesService } from './modules/templates/templates.service.js';
import { closePdfWorkers, prepareDocument } from './pdf/prepare.js';
import { closeRenderWorkers, renderInSandbox } from './pdf/render-sandbox.js';
import { checkAttachment, closeAttachmentWorkers } from './pdf/attachment-sandbox.js';
import { createSignerAttachments } from './engine/local/signer-attachments.js';
import { closeSealWorkers, createSealer } from './pdf/seal-sandbox.js';
import { archival } from './engine/local/archive-job.js';
import type { PreparedDocument, UploadPart } from './pdf/types.js';
import { checkInWorker, createSealCheck } from './providers/certs/check.js';
import { loadSigner } from './providers/certs/signer.js';
import { sealingKeyOf } from './pdf/seal-signature.js';
import { createDocumentsService } from './modules/documents/documents.service.js';
import { createEmailProvider, createOutboxEmail, type EmailProvider } from './providers/email/index.js';
import { createBlobStorage, type BlobStorage } from './providers/storage/index.js';
import { createStripeEventsRepo } from './modules/stripe/stripe-events.repo.js';
import { createStripeEventsService, type StripeEventHandler } from './modules/stripe/stripe-events.service.js';
import { sendCodeJob, verificationPeriodicTasks } from './modules/verifications/verifications.jobs.js';
import { createVerificationsRepo } from './modules/verifications/verifications.repo.js';
import { createVerificationsService } from './modules/verifications/verifications.service.js';
import { createIdentityProviders, type StripeVerificationSession } from './providers/identity/index.js';
import { topUpPeriodicTasks } from './modules/billing/top-ups.jobs.js';
import { createCardPayments } from './container-payments.js';
import { createDashboard } from './container-dashboard.js';
import { createBulkSends } from './container-bulk.js';
import { deliverJob } from './modules/webhooks/webhooks.jobs.js';
import { createWebhooksRepo } from './modules/webhooks/webhooks.repo.js';
import { createWebhooksService } from './modules/webhooks/webhooks.service.js';
import { postWebhook } from './providers/webhooks/http-sender.js';
import { checkResolvable, parseWebhookUrl, type Resolver } from './providers/webhooks/url-policy.js';

export const VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;

export type ContainerOverrides = {
  database?: Database;
  logger?: Logger;
  jobs?: JobDefinition[];
  /** Extra periodic tasks (tests watch how often the cluster runs one). */
  periodic?: PeriodicTask[];
  email?: EmailProvider;
  storage?: BlobStorage;
  /** DNS for webhook URLs (tests inject answers; the default asks the system resolver). */
  webhookResolver?: Resolver;
  /** The clock of wallet sign-in, wallet JWTs, verifications and the Documenso orphan sweep (tests move it to expire nonces, tokens and codes, and to age drafts). */
  clock?: () => Date;
};

/** The composition root: the only place that knows every concrete implementation. */
export async function createContainer(config: Config, overrides: ContainerOverrides = {}) {
  const logger = overrides.logger ?? pino({ level: config.logLevel }, stdoutLogDestination());
  const database = overrides.database ?? (await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.databasePoolSize, embedded: config.embeddedDb, pgliteSharedBuffersMb: config.pgliteSharedBuffersMb, timeouts: config.databaseTimeouts }));
  const { db } = database;
  const clock = overrides.clock ?? (() => new Date());
  const metrics = createMetrics({ database }); // GET /metrics: this container's own registry

  const repos = {
    accounts: createAccountRepo(),
    billing: createBillingRepo(),
    audit: createAuditRepo(),
    idempotency: createIdempotencyRepo(),
  };
  const audit = createAuditService({ repo: repos.audit });
  const summaryRepo = createSummaryRepo();
  const billing = createBillingService({ repo: repos.billing, topUpUrl: `${config.dashboardUrl}/billing`, db, metrics });
  const services = {
    audit,
    billing,
    account: createAccountService({ accounts: repos.accounts, billing: repos.billing, summary: summaryRepo, audit, publicUrl: config.publicUrl }),
    summary: createSummaryService({ repo: summaryRepo, now: clock }),
    products: createProductsService({ repo: createProductsRepo(), audit, productId: config.productId }),
    apiKeys: createApiKeysService({ accounts: repos.accounts, audit }),
    ops: createOpsService({ accounts: repos.accounts, billing, audit, auditRepo: repos.audit, sandboxLimit: config.sandboxLimit }),
  };

  // Envelopes and the built-in signing engine.
  const storage = overrides.storage ?? await createBlobStorage({ driver: config.storageDriver, root: path.join(config.dataDir, 'blobs'), db, s3: config.s3, logger: logger.child({ component: 'storage' }) });
  const outboxDir = path.join(config.dataDir, 'outbox');
  const email = overrides.email ?? createEmailProvider({ smtpUrl: config.smtpUrl, from: config.mailFrom, outboxDir });
  const outbox = createOutboxEmail(outboxDir, config.mailFrom);
  const notifier = createNotifier({ publicUrl: config.publicUrl, attachmentsEmailMaxBytes: config.attachments.emailMaxBytes });
  const tokens = createTokenDeriver(config.signingLinkSecret);
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
  // Identity verifications: the emailed code is built in; Stripe Identity (documents) and Stripe's webhook when configured.
  // Stripe's SDK (some 6 MiB of heap) is imported only when Stripe is configured.
  const stripeClient = config.stripe && (await import('./providers/payments/stripe-client.js'));
  const stripe = config.stripe && stripeClient && stripeClient.createStripeClient({ secretKey: config.stripe.secretKey, apiUrl: config.stripe.apiUrl });
  const verifications = createVerificationsService({
    db,
    repo: createVerificationsRepo(),
    providers: createIdentityProviders({ signingLinkSecret: config.signingLinkSecret, publicUrl: config.publicUrl, stripe }),
    billing,
    audit,
    now: clock,
  });
  const applySession: StripeEventHandler = (tx, event, op) => verifications.applyStripeSession(tx, event.data.object as StripeVerificationSession, op);
  // Card top-ups through Stripe Checkout, and the handlers of their Stripe events (container-payments.ts).
  const { topUps, stripeHandlers: cardHandlers } = createCardPayments({ db, stripe, webhookSecret: config.stripe?.webhookSecret, accounts: repos.accounts, billing, audit, dashboardUrl: config.dashboardUrl, now: clock });
  const stripeEvents = createStripeEventsService({
    db,
    repo: createStripeEventsRepo(),
    verify: stripe && stripeClient && config.stripe?.webhookSecret ? stripeClient.stripeEventVerifier(stripe, config.stripe.webhookSecret) : undefined,
    handlers: {
      ...Object.fromEntries(['verified', 'requires_input', 'processing', 'canceled'].map((s) => [`identity.verification_session.${s}`, applySession])),
      ...cardHandlers,
    },
  });
  // Balance refunds credit the balance in a job; wallet (x402) refunds are records the operator completes.
  const refunds = createRefundsService({ repo: createRefundsRepo(), wallet: createWalletRefundsRepo(), billing, audit, metrics });
  // x402 pay-per-call (container-x402.ts, imported only when X402_* is configured).
  const x402 =
    config.x402 &&
    (await import('./container-x402.js')).createX402(config.x402, {
      db,
      billing,
      refunds,
      audit,
      topUpUrl: `${config.dashboardUrl}/billing`,
      log: logger.child({ component: 'x402' }),
      metrics,
    });
  const envelopesRepo = createEnvelopesRepo();
  // Imported only when configured: Documenso's SDK is most of a start-up's module graph otherwise.
  const remote = config.documenso && (await import('./engine/documenso/index.js')).createDocumenso({ config: config.documenso, maxPdfBytes: config.maxPdfBytes, db, log: logger.child({ component: 'documenso' }), envelopeIdsOfRecipients: envelopesRepo.engineEnvelopeIdsOfRecipients, heldOf: envelopesRepo.heldEngineEnvelopeIds, now: () => clock().getTime() });
  const engine = remote?.engine ?? local.engine;
  const signingUrlsOf = (remote?.engine ?? local).linksOf;
  const sync = createEnvelopeSync({
    repo: envelopesRepo,
    engine,
    refunds,
    signingUrlsOf,
    gatesOf: verifications.gatesOf,
    endGates: verifications.cancelGates,
    publish: (tx, e) => webhooks.fanOut(tx, e),
    ended: createSenderNotices({ accounts: repos.accounts, dashboardUrl: config.dashboardUrl }).ended,
  });
  // Uploads are files the parsing worker reads itself; `transfer` hands parts given as bytes (MCP's) to it instead of copying them.
  const prepare = (parts: UploadPart[], owner: string): Promise<PreparedDocument> =>
    prepareDocument(parts, { timeoutMs: config.pdfParseTimeoutMs, maxMemoryMb: config.pdfParseMaxMemoryMb, transfer: true, owner });
  const envelopes = createEnvelopesService({
    repo: envelopesRepo,
    engine,
    sync,
    billing,
    verifications,
    audit,
    prepareDocument: prepare,
    signingUrlsOf,
    senderOf: async (customerId) => repos.accounts.findCustomer(db, customerId),
    envelopeExpiryDays: config.envelopeExpiryDays,
    storageExpiryDays: config.storageExpiryDays,
  });
  const reminders = createEnvelopeReminders({ repo: envelopesRepo, engine, sync, audit, publish: (tx, e) => webhooks.fanOut(tx, e), defaultLocaleOf: async (tx, id) => (await repos.accounts.findCustomer(tx, id))?.defaultLocale ?? null });
  // Templates: Signet's own PDFs and fields; an envelope made from one is planned and created by the envelope service.
  const templatesRepo = createTemplatesRepo();
  const templates = createTemplatesService({ repo: templatesRepo, storage, audit, prepareDocument: prepare, envelopes });
  const bulk = createBulkSends({ db, templatesRepo, templates, billing, audit, webhooks }, config);
  const actions = createRecipientActions({ repo: localRepo, storage, tokens, notifier, local });
  // A recipient's document as it stands: rendered in its own sandbox pool, once per version, then read from storage.
  const views = createDocumentViews({
    repo: localRepo,
    storage,
    render: (input, owner) => renderInSandbox(input, { maxMemoryMb: config.pdfParseMaxMemoryMb, timeoutMs: config.pdfParseTimeoutMs * 3, owner }),
  });
  const editing = createEnvelopeEditing({ repo: envelopesRepo, engine, audit, fieldDto: sync.fieldDto, secret: config.signingLinkSecret, publicUrl: config.publicUrl, now: clock, sync, verifications, publish: (tx, e) => webhooks.fanOut(tx, e) });
  const signing = createSigningService({ db, actions, sync, views, verifications, handover: editing.recipientHandover, attachments: createSignerAttachments({ repo: localRepo, storage, config: config.attachments, check: (job, owner) => checkAttachment(job, { maxMemoryMb: config.pdfParseMaxMemoryMb, timeoutMs: config.pdfParseTimeoutMs, owner }) }) });
  // The sealing certificate is loaded once, on first use, and reused.
  let signer: ReturnType<typeof loadSigner> | undefined;
  const getSigner = () => (signer ??= loadSigner({ p12Path: config.signingCertP12Path, passphrase: config.signingCertPassphrase, dataDir: config.dataDir }));
  // Checked at start (main), so a bad certificate refuses the process instead of failing every seal;
  // in a worker thread, so that an idle server does not hold what opening it loads (check.ts).
  const sealCertificate = createSealCheck(() =>
    checkInWorker({ p12Path: config.signingCertP12Path, passphrase: config.signingCertPassphrase, dataDir: config.dataDir, allowSelfSigned: config.signingCertAllowSelfSigned }),
  );
  // /verify-document: sealed files by their hash, and the sealing certificate's key for the PAdES check.
  let sealingKey: Promise<ReturnType<typeof sealingKeyOf>> | undefined;
  const documents = createDocumentsService({
    sealed: createSealedDocumentsRepo(),
    envelopeIdOf: async (tx, engineDocumentId) => (await envelopesRepo.findByEngineId(tx, engineDocumentId))?.id,
    sealingKey: () => (sealingKey ??= getSigner().then(({ signer }) => sealingKeyOf(signer.certificate))),
  });
  const apiKeyCache = createApiKeyCache({ ttlMs: config.authCacheTtlMs });
  // Wallet sign-in (SIWE) and the stateless wallet JWT.
  const walletTokens = createWalletTokens({ secret: config.jwtSecret, publicUrl: config.publicUrl, now: clock });
  const auth = createAuthService({
    db,
    repo: createAuthRepo(),
    accounts: services.account,
    audit,
    tokens: walletTokens,
    publicUrl: config.publicUrl,
    sandboxLimit: config.sandboxLimit,
    now: clock,
  });
  const dashboard = createDashboard({ db, config, accounts: repos.accounts, audit, logger, now: clock });
  // One idempotency core for REST's Idempotency-Key and MCP's idempotencyKey: one charge per key either way.
  const idempotency = createIdempotency({ db, repo: repos.idempotency, leaseMs: config.idempotencyLeaseMs, ttlMs: config.idempotencyTtlHours * 3_600_000 });
  // A reconnected listener may have missed revocations: drop every cached key.
  const stopKeyEvictions = await database.listen(API_KEYS_CHANNEL, (keyHash) => apiKeyCache.evict(keyHash), () => apiKeyCache.clear());

  const sealTimeoutMs = Math.max(120_000, config.pdfParseTimeoutMs * 6);
  const archive = archival({ db, storage, signing: config.signing, limits: { maxMemoryMb: config.pdfParseMaxMemoryMb, timeoutMs: sealTimeoutMs } });
  const worker = createWorker({
    database,
    jobs: [
      blobSweepJob({ db, storage, owners: [engineBlobOwner(localRepo), templateBlobOwner(templatesRepo)] }),
      deleteDocumentJob({ storage }),
      purgeDocumentJob({ db, repo: localRepo, storage }),
      distributeJob({ db, envelopes }),
      ...remoteSweepJobs({ db, envelopes }),
      sendEmailJob({ email, outbox, storage }),
      senderNoticeJob({ db, engine, email, outbox }),
      refundJob({ db, refunds }),
      sealJob({
        db,
        repo: localRepo,
        storage,
        notifier,
        // In a worker thread, off the event loop (the lease heartbeat keeps beating); the key stays here.
        seal: createSealer({ getSigner, signing: config.signing, limits: { maxMemoryMb: config.pdfParseMaxMemoryMb, timeoutMs: sealTimeoutMs }, logger }),
        envelopeIdOf: async (engineEnvelopeId) => (await envelopesRepo.findByEngineId(db, engineEnvelopeId))?.id,
        lockAndSync: sync.lockAndSync,
        verificationUrl: `${config.publicUrl}/verify-document`,
        timeoutMs: sealTimeoutMs + 5 * 60_000,
      }),
      ...archive.jobs,
      deliverJob({
        db,
        repo: webhooksRepo,
        audit,
        metrics,
        scheduleMs: config.webhookRetryScheduleMs,
        disableAfter: config.webhookDisableAfter,
        send: (req) => postWebhook({ ...req, ...webhookPolicy, timeoutMs: config.webhookTimeoutMs }),
      }),
      sendCodeJob({ db, codes: verifications, email, outbox }),
      sendSignInLinkJob({ db, signIn: dashboard.signIn, email }),
      ...(x402 ? [x402SweepJob({ x402: x402.service })] : []),
      ...(remote?.jobs ?? []), ...storeMaintenance(database).jobs, ...bulk.jobs,
      ...(overrides.jobs ?? []),
    ],
    periodic: [...archive.periodic, idempotencyPurgeTask(repos.idempotency), ...envelopePeriodicTasks({ envelopes }), ...reminders.periodic, blobSweepTask(), ...authPeriodicTasks({ auth }), ...verificationPeriodicTasks({ verifications }), ...signInPeriodicTasks({ signIn: dashboard.signIn }), ...topUpPeriodicTasks({ topUps }), ...(x402 ? x402PeriodicTasks({ x402: x402.service }) : []), ...(remote?.periodic ?? []), ...storeMaintenance(database).periodic, ...(overrides.periodic ?? [])],
    // Every dead job alerts (an invalid payload under its own kind); POST /ops/jobs/{id}/retry queues it again.
    onDeadJob: (tx, job, reason, cause) =>
      audit.alert(tx, { kind: cause === 'invalid_payload' ? 'job_invalid_payload' : 'job_dead', message: `Job ${job.id} (${job.type}) ended dead: ${reason}`, resourceType: 'job', resourceId: String(job.id), data: { cause, jobType: job.type } }),
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
    metrics,
    apiKeyCache,
    x402,
    auth,
    walletTokens,
    dashboard,
    storage,
    email,
    local,
    /** For /health: which engine, and Documenso's circuit; for the Documenso webhook: its secret and the sync. */
    engine: { name: config.signingEngine, circuit: () => remote?.engine.circuit, webhookSecret: config.documenso?.webhookSecret, syncOutside: sync.syncOutside, byNumericId: (db: DbOrTx, id: string) => envelopesRepo.engineIdByNumericId(db, id, 'envelope_') },
    envelopes,
    reminders,
    ...editing,
    templates, bulkSends: bulk.service,
    refunds,
    webhooks,
    verifications,
    stripeEvents,
    topUps,
    signing,
    getSigner,
    sealCertificate,
    documents,
    idempotency,
    commitMutation: createMutationRunner(idempotency),
    async close(): Promise<void> {
      await worker.stop();
      await stopKeyEvictions();
      await email.close();
      await closePdfWorkers();
      await closeSealWorkers();
      await Promise.all([closeRenderWorkers(), closeAttachmentWorkers()]);
      await database.close();
    },
  };
}

export type Container = Awaited<ReturnType<typeof createContainer>>;
