import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from './config-error.js';
import { ZTrustProxy, type TrustProxy } from './config-proxy.js';
import { SIGNING_ENV, signingConfig, type SigningConfig } from './config-signing.js';
import { BULK_ENV, bulkSendConfig, type BulkSendConfig } from './config-bulk.js';
import { ATTACHMENT_ENV, attachmentsConfig, type AttachmentsConfig } from './config-attachments.js';
import { signingCertAllowSelfSigned } from './config-cert.js';
import { s3Config, type S3Config } from './config-storage.js';
import { x402Config, type X402Config } from './config-x402.js';
import { MAX_IDEMPOTENCY_TTL_HOURS, MAX_JOB_LEASE_MS, parseDurations } from './config-durations.js';

export type { X402Config } from './config-x402.js';

export { parseDurations };

/** An empty variable (`PORT=` as compose files write it) counts as unset, like an absent one. */
const unsetIfEmpty = (v: unknown) => (v === '' ? undefined : v);
const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.preprocess(unsetIfEmpty, z.coerce.number().int().min(min).max(max).optional());
const bool = z.preprocess(unsetIfEmpty, z.enum(['true', 'false', '1', '0']).optional()).transform((v) => (v === undefined ? undefined : v === 'true' || v === '1'));
const url = z.url({ protocol: /^https?$/ }).transform((u) => u.replace(/\/+$/, ''));
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(unsetIfEmpty, schema.optional());

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The environment as Signet reads it. Every variable is documented in docs/operating.md. */
const ZEnv = z.object({
  NODE_ENV: optional(z.string()),
  PORT: int(0, 65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  PUBLIC_URL: optional(url),
  SIGNING_URL: optional(url),
  DASHBOARD_URL: optional(url),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: optional(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')),
  DATABASE_POOL_SIZE: int(1, 500).default(10),
  DATABASE_ACQUIRE_TIMEOUT_MS: int(100, 600_000).default(10_000),
  DATABASE_STATEMENT_TIMEOUT_MS: int(0, 3_600_000).default(60_000),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: int(0, 3_600_000).default(60_000),
  EMBEDDED_DB: optional(z.enum(['pglite', 'postgres'])).default('pglite'),
  PGLITE_SHARED_BUFFERS_MB: int(1, 4096).default(8),
  OPS_TOKEN: optional(z.string().min(16, 'must be at least 16 characters')),
  JWT_SECRET: optional(z.string().min(32, 'must be at least 32 characters')),
  SIGNING_LINK_SECRET: optional(z.string().min(32, 'must be at least 32 characters')),
  S2S_KEY: optional(z.string().min(16, 'must be at least 16 characters')),
  SMTP_URL: optional(z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')),
  MAIL_FROM: z.string().default('Signet <no-reply@signet.local>'),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default('1m,5m,15m,1h,6h,24h')
    .transform((v, ctx) => {
      try {
        return parseDurations(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    }),
  WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(10_000),
  WEBHOOK_DISABLE_AFTER: int(1).default(50),
  WEBHOOK_ALLOW_HOSTS: z
    .string()
    .default('')
    .transform((v) => v.split(',').map((h) => h.trim().toLowerCase()).filter(Boolean)),
  SCHEDULER_INTERVAL_MS: int(50, 3_600_000).default(5_000),
  WORKER_ENABLED: bool.default(true),
  WORKER_CONCURRENCY: int(1, 64).default(4),
  JOB_LEASE_MS: int(1_000, MAX_JOB_LEASE_MS).default(60_000),
  MAX_PDF_BYTES: int(1024).default(26_214_400),
  RATE_LIMIT_MAX: int(1).default(600),
  RATE_LIMIT_WINDOW_MS: int(100).default(60_000),
  VERIFY_DOCUMENT_RATE_LIMIT: int(1).default(30),
  AUTH_FAILURE_LIMIT: int(0).default(30),
  AUTH_FAILURE_WINDOW_MS: int(100).default(60_000),
  REDIS_URL: optional(z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')),
  REDIS_KEY_PREFIX: optional(z.string().regex(/^[A-Za-z0-9:._-]{1,64}$/, 'must be 1 to 64 letters, digits, : . _ or -')).default('signet:'),
  SANDBOX_LIMIT: int(0).default(100),
  IDEMPOTENCY_TTL_HOURS: int(1, MAX_IDEMPOTENCY_TTL_HOURS).default(24),
  IDEMPOTENCY_LEASE_MS: int(100, 3_600_000).default(60_000),
  AUTH_CACHE_TTL_MS: int(0, 3_600_000).default(30_000),
  ENVELOPE_EXPIRY_DAYS: int(1, 3650).default(30),
  STORAGE_EXPIRY_DAYS: int(1, 3650).default(365),
  SIGNING_CERT_P12_PATH: optional(z.string()),
  SIGNING_CERT_PASSPHRASE: optional(z.string()),
  ...SIGNING_ENV,
  ...BULK_ENV,
  ...ATTACHMENT_ENV,
  SIGNING_CERT_ALLOW_SELF_SIGNED: bool.default(false),
  PDF_PARSE_TIMEOUT_MS: int(100, 600_000).default(20_000),
  PDF_PARSE_MAX_MEMORY_MB: int(32, 16_384).default(512),
  PDF_PARSE_WARM_WORKERS: int(0, 4).default(0),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: ZTrustProxy,
  PRODUCT_ID: optional(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 letters, digits, _ . or -')).default('service_id'),
  MCP_ENABLED: bool.default(true),
  MCP_INLINE_MAX_BYTES: int(0, 64 * 1024 * 1024).default(5 * 1024 * 1024),
  METRICS_PUBLIC: bool.default(false),
  SHUTDOWN_DRAIN_MS: int(0, 600_000).default(5_000),
  X402_FACILITATOR_URL: optional(url),
  X402_NETWORK: optional(z.string().regex(/^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/, 'must be a CAIP-2 network id like eip155:84532')),
  X402_ASSET: optional(z.string().regex(EVM_ADDRESS, 'must be 0x followed by 40 hex digits')),
  X402_PAY_TO: optional(z.string().regex(EVM_ADDRESS, 'must be 0x followed by 40 hex digits')),
  X402_ASSET_NAME: optional(z.string().min(1)),
  X402_ASSET_VERSION: optional(z.string().min(1)).default('2'),
  X402_MIN_PRICE: optional(z.string().regex(/^\d+(\.\d{1,6})?$/, 'must be a USD amount like 0.001')).default('0.001'),
  X402_SETTLE_TIMEOUT_MS: int(100, 120_000).default(15_000),
  X402_RPC_URL: optional(url),
  STRIPE_SECRET_KEY: optional(z.string().regex(/^(sk|rk)_(test|live)_[A-Za-z0-9_]+$/, 'must be a Stripe secret key (sk_live_…, sk_test_… or rk_…)')),
  STRIPE_WEBHOOK_SECRET: optional(z.string().regex(/^whsec_[A-Za-z0-9_+/=]+$/, 'must be a Stripe webhook signing secret (whsec_…)')),
  STRIPE_API_URL: optional(url),
  // The issuer exactly as the provider names it (no trailing-slash trimming: discovery compares it).
  OIDC_ISSUER: optional(z.url({ protocol: /^https?$/ })),
  OIDC_CLIENT_ID: optional(z.string().min(1).max(500)),
  OIDC_CLIENT_SECRET: optional(z.string().min(1).max(2000)),
  OIDC_PROVIDER_NAME: optional(z.string().min(1).max(60)),
  SIGNING_ENGINE: optional(z.enum(['local', 'documenso'])).default('local'),
  DOCUMENSO_URL: optional(url),
  DOCUMENSO_API_KEY: optional(z.string().min(1).max(500)),
  DOCUMENSO_WEBHOOK_SECRET: optional(z.string().min(16, 'must be at least 16 characters').max(500)),
  DOCUMENSO_WEBAPP_URL: optional(url),
  DOCUMENSO_TIMEOUT_MS: int(500, 120_000).default(10_000),
  STORAGE_DRIVER: optional(z.enum(['local', 'postgres', 's3'])).default('local'),
  S3_ENDPOINT: optional(url),
  S3_BUCKET: optional(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$/, 'must be a bucket name: 3 to 63 letters, digits, . _ or -')),
  S3_REGION: optional(z.string().regex(/^[a-z0-9-]{1,64}$/, 'must be a region name like us-east-1')),
  S3_ACCESS_KEY_ID: optional(z.string().min(1).max(500)),
  S3_SECRET_ACCESS_KEY: optional(z.string().min(1).max(2000)),
  S3_FORCE_PATH_STYLE: bool,
});

export type Config = Readonly<{
  env: string;
  port: number;
  host: string;
  publicUrl: string;
  signingUrl: string;
  dashboardUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** PostgreSQL's bounds on waiting: for a pool connection, on one statement, on an idle open transaction (0: none). */
  databaseTimeouts: Readonly<{ acquireMs: number; statementMs: number; idleInTransactionMs: number }>;
  /** The store without DATABASE_URL: PGlite in DATA_DIR/pglite, or a PostgreSQL server of our own in DATA_DIR/pg. */
  embeddedDb: 'pglite' | 'postgres';
  /** PGlite's page cache, resident from its start (docs/operating.md: Memory). */
  pgliteSharedBuffersMb: number;
  opsToken: string;
  jwtSecret: string;
  /** Key of recipients' signing tokens; separate from jwtSecret so one leak does not forge the other. */
  signingLinkSecret: string;
  s2sKey: string | undefined;
  smtpUrl: string | undefined;
  mailFrom: string;
  webhookRetryScheduleMs: readonly number[];
  webhookTimeoutMs: number;
  webhookDisableAfter: number;
  webhookAllowHosts: readonly string[];
  schedulerIntervalMs: number;
  workerEnabled: boolean;
  workerConcurrency: number;
  jobLeaseMs: number;
  maxPdfBytes: number;
  rateLimitMax: number;
  rateLimitWindowMs: number;
  /** Anonymous POST /v1/documents/verify calls per IP per window (each may carry MAX_PDF_BYTES). */
  verifyDocumentRateLimit: number;
  /** Refused credentials per IP per window before the IP gets 429 on authenticated routes; 0: off. */
  authFailureLimit: number;
  authFailureWindowMs: number;
  /** Where the rate-limit and auth-failure counters are shared between nodes; unset: each process counts alone. */
  redisUrl: string | undefined;
  /** Put before every Redis key, so several deployments (or test runs) can share one Redis. */
  redisKeyPrefix: string;
  sandboxLimit: number;
  idempotencyTtlHours: number;
  idempotencyLeaseMs: number;
  authCacheTtlMs: number;
  envelopeExpiryDays: number;
  storageExpiryDays: number;
  signingCertP12Path: string | undefined;
  signingCertPassphrase: string | undefined;
  /** PAdES level, timestamp authorities and revocation fetching (config-signing.ts). */
  signing: SigningConfig;
  /** Bulk sends: body size and parallel jobs (config-bulk.ts). */
  bulkSend: BulkSendConfig;
  /** Signer attachments: sizes, pages, uploads, what a completion email carries (config-attachments.ts). */
  attachments: AttachmentsConfig;
  /** An operator's self-signed P12 is refused at start unless this is set. */
  signingCertAllowSelfSigned: boolean;
  pdfParseTimeoutMs: number;
  pdfParseMaxMemoryMb: number;
  /** Parsing workers `serve` starts at boot and keeps however long they are idle (0: the first upload starts one). */
  pdfParseWarmWorkers: number;
  logLevel: string;
  trustProxy: TrustProxy;
  /** The product id that POST /v1/account/products/{product}/enable accepts. */
  productId: string;
  /** POST /mcp and /.well-known/mcp.json; off: 503 and 404. */
  mcpEnabled: boolean;
  /** Document bytes one POST /mcp answer carries inline (base64), shared by a batch; past it, download links. */
  mcpInlineMaxBytes: number;
  /** GET /metrics without the operator token (for a scraper on a private network). */
  metricsPublic: boolean;
  /** On SIGTERM, how long /health/ready answers 503 while the node still serves, before it closes. */
  shutdownDrainMs: number;
  /** x402 pay-per-call; undefined (off) unless the facilitator, network, asset and receiver are all set. */
  x402: X402Config | undefined;
  /** Stripe (Identity now, card top-ups later); undefined (off) without STRIPE_SECRET_KEY. */
  stripe: StripeConfig | undefined;
  /** Dashboard sign-in through OpenID Connect; undefined: emailed sign-in links instead. */
  oidc: OidcConfig | undefined;
  /** Who collects the signatures: the built-in engine, or Documenso (then `documenso` is set). */
  signingEngine: 'local' | 'documenso';
  documenso: DocumensoConfig | undefined;
  /** Where document bytes live: DATA_DIR/blobs (one node), the database, or an S3 bucket (then `s3` is set). */
  storageDriver: 'local' | 'postgres' | 's3';
  s3: S3Config | undefined;
  /** Secrets generated on this start (not given in the environment), with the file they were kept in. */
  generatedSecrets: readonly { name: string; file: string }[];
  /** Every secret not given in the environment, read from (or generated into) its file in DATA_DIR: per node unless copied. */
  dataDirSecrets: readonly { name: string; file: string }[];
}>;

export type StripeConfig = Readonly<{
  secretKey: string;
  /** Signing secret of POST /webhooks/stripe; without it the route answers 404. */
  webhookSecret: string | undefined;
  /** Base URL of a Stripe-compatible API (stripe-mock, a local stand-in); Stripe itself when unset. */
  apiUrl: string | undefined;
}>;

export type OidcConfig = Readonly<{
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** "Sign in with <name>": OIDC_PROVIDER_NAME, else the issuer's host. */
  providerName: string;
}>;

export type DocumensoConfig = Readonly<{
  /** The v2 API base, e.g. https://app.documenso.com/api/v2. */
  url: string;
  apiKey: string;
  /** What Documenso sends as X-Documenso-Secret to POST /engine/documenso/webhook. */
  webhookSecret: string;
  /** Where recipients sign: `<webappUrl>/sign/<token>`; DOCUMENSO_URL's origin and path before /api unless set. */
  webappUrl: string;
  /** Per attempt of an API call, its answer read (a PDF download has its own, longer bound). */
  timeoutMs: number;
}>;

export { ConfigError };

function documensoConfig(e: z.infer<typeof ZEnv>): DocumensoConfig | undefined {
  const given = { DOCUMENSO_URL: e.DOCUMENSO_URL, DOCUMENSO_API_KEY: e.DOCUMENSO_API_KEY, DOCUMENSO_WEBHOOK_SECRET: e.DOCUMENSO_WEBHOOK_SECRET };
  if (e.SIGNING_ENGINE !== 'documenso') return undefined;
  const missing = Object.entries(given).filter(([, v]) => v === undefined).map(([k]) => k);
  if (missing.length) throw new ConfigError(`Invalid configuration: ${missing[0]}: required when SIGNING_ENGINE=documenso (set all of ${Object.keys(given).join(', ')})`);
  const url = e.DOCUMENSO_URL!;
  return Object.freeze({ url, apiKey: e.DOCUMENSO_API_KEY!, webhookSecret: e.DOCUMENSO_WEBHOOK_SECRET!, webappUrl: e.DOCUMENSO_WEBAPP_URL ?? url.replace(/\/api(\/v\d+)?$/, ''), timeoutMs: e.DOCUMENSO_TIMEOUT_MS });
}

function oidcConfig(e: z.infer<typeof ZEnv>): OidcConfig | undefined {
  const required = { OIDC_ISSUER: e.OIDC_ISSUER, OIDC_CLIENT_ID: e.OIDC_CLIENT_ID, OIDC_CLIENT_SECRET: e.OIDC_CLIENT_SECRET };
  const missing = Object.entries(required).filter(([, v]) => v === undefined).map(([k]) => k);
  if (missing.length === Object.keys(required).length) {
    if (e.OIDC_PROVIDER_NAME !== undefined) throw new ConfigError('Invalid configuration: OIDC_PROVIDER_NAME: requires OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET');
    return undefined;
  }
  if (missing.length) throw new ConfigError(`Invalid configuration: ${missing[0]}: required when OpenID Connect is configured (set all of ${Object.keys(required).join(', ')})`);
  const issuer = new URL(e.OIDC_ISSUER!);
  // Tokens and the client secret cross this connection: plain http only to a provider on this machine.
  if (issuer.protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(issuer.hostname)) {
    throw new ConfigError('Invalid configuration: OIDC_ISSUER: must be https (http only for localhost, 127.0.0.1 or [::1])');
  }
  if (issuer.search || issuer.hash) throw new ConfigError('Invalid configuration: OIDC_ISSUER: must have no query or fragment');
  return Object.freeze({ issuer: e.OIDC_ISSUER!, clientId: e.OIDC_CLIENT_ID!, clientSecret: e.OIDC_CLIENT_SECRET!, providerName: e.OIDC_PROVIDER_NAME ?? issuer.host });
}

function stripeConfig(e: z.infer<typeof ZEnv>): StripeConfig | undefined {
  if (e.STRIPE_SECRET_KEY === undefined) {
    // Half a configuration is a mistake, as with x402: a webhook secret alone verifies events nobody can act on.
    const orphan = e.STRIPE_WEBHOOK_SECRET !== undefined ? 'STRIPE_WEBHOOK_SECRET' : e.STRIPE_API_URL !== undefined ? 'STRIPE_API_URL' : undefined;
    if (orphan) throw new ConfigError(`Invalid configuration: ${orphan}: requires STRIPE_SECRET_KEY`);
    return undefined;
  }
  return Object.freeze({ secretKey: e.STRIPE_SECRET_KEY, webhookSecret: e.STRIPE_WEBHOOK_SECRET, apiUrl: e.STRIPE_API_URL });
}

/**
 * Reads a secret from the environment, else from DATA_DIR, else generates it once and keeps it there
 * with mode 0600 so every later start (and `signet ops`) finds the same value.
 */
function secretFromDataDir(dataDir: string, file: string, given: string | undefined, generated: { name: string; file: string }[], name: string, kept: { name: string; file: string }[]): string {
  if (given) return given;
  const full = path.join(dataDir, file);
  kept.push({ name, file: full });
  if (existsSync(full)) return readFileSync(full, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const value = randomBytes(32).toString('hex');
  writeFileSync(full, value + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(full, 0o600);
  generated.push({ name, file: full });
  return value;
}

/** Validates the environment; a bad value throws ConfigError with one line naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ZEnv.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue.path[0] ?? 'environment');
    // The value is not echoed: it may be a secret or a URL with a password in it.
    throw new ConfigError(`Invalid configuration: ${name}: ${issue.message}`);
  }
  const e = parsed.data;
  // Before any secret is generated: a refused configuration leaves DATA_DIR untouched.
  const stripe = stripeConfig(e);
  const oidc = oidcConfig(e);
  const documenso = documensoConfig(e);
  const s3 = s3Config(e);
  const signing = signingConfig(e);
  const allowSelfSigned = signingCertAllowSelfSigned(e);
  const dataDir = path.resolve(e.DATA_DIR);
  const generated: { name: string; file: string }[] = [];
  const kept: { name: string; file: string }[] = [];
  const publicUrl = e.PUBLIC_URL ?? `http://localhost:${e.PORT}`;
  return Object.freeze({
    env: e.NODE_ENV ?? 'development',
    port: e.PORT,
    host: e.HOST,
    publicUrl,
    signingUrl: e.SIGNING_URL ?? `${publicUrl}/sign`,
    dashboardUrl: e.DASHBOARD_URL ?? `${publicUrl}/dashboard`,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    databaseTimeouts: Object.freeze({ acquireMs: e.DATABASE_ACQUIRE_TIMEOUT_MS, statementMs: e.DATABASE_STATEMENT_TIMEOUT_MS, idleInTransactionMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS }),
    embeddedDb: e.EMBEDDED_DB,
    pgliteSharedBuffersMb: e.PGLITE_SHARED_BUFFERS_MB,
    opsToken: secretFromDataDir(dataDir, 'ops-token', e.OPS_TOKEN, generated, 'OPS_TOKEN', kept),
    jwtSecret: secretFromDataDir(dataDir, 'jwt-secret', e.JWT_SECRET, generated, 'JWT_SECRET', kept),
    signingLinkSecret: secretFromDataDir(dataDir, 'signing-link-secret', e.SIGNING_LINK_SECRET, generated, 'SIGNING_LINK_SECRET', kept),
    s2sKey: e.S2S_KEY,
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    webhookRetryScheduleMs: Object.freeze(e.WEBHOOK_RETRY_SCHEDULE),
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    webhookDisableAfter: e.WEBHOOK_DISABLE_AFTER,
    webhookAllowHosts: Object.freeze(e.WEBHOOK_ALLOW_HOSTS),
    schedulerIntervalMs: e.SCHEDULER_INTERVAL_MS,
    workerEnabled: e.WORKER_ENABLED,
    workerConcurrency: e.WORKER_CONCURRENCY,
    jobLeaseMs: e.JOB_LEASE_MS,
    maxPdfBytes: e.MAX_PDF_BYTES,
    rateLimitMax: e.RATE_LIMIT_MAX,
    rateLimitWindowMs: e.RATE_LIMIT_WINDOW_MS,
    verifyDocumentRateLimit: e.VERIFY_DOCUMENT_RATE_LIMIT,
    authFailureLimit: e.AUTH_FAILURE_LIMIT,
    authFailureWindowMs: e.AUTH_FAILURE_WINDOW_MS,
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    sandboxLimit: e.SANDBOX_LIMIT,
    idempotencyTtlHours: e.IDEMPOTENCY_TTL_HOURS,
    idempotencyLeaseMs: e.IDEMPOTENCY_LEASE_MS,
    authCacheTtlMs: e.AUTH_CACHE_TTL_MS,
    envelopeExpiryDays: e.ENVELOPE_EXPIRY_DAYS,
    storageExpiryDays: e.STORAGE_EXPIRY_DAYS,
    signingCertP12Path: e.SIGNING_CERT_P12_PATH,
    signingCertPassphrase: e.SIGNING_CERT_PASSPHRASE,
    signing,
    bulkSend: bulkSendConfig(e),
    attachments: attachmentsConfig(e),
    signingCertAllowSelfSigned: allowSelfSigned,
    pdfParseTimeoutMs: e.PDF_PARSE_TIMEOUT_MS,
    pdfParseMaxMemoryMb: e.PDF_PARSE_MAX_MEMORY_MB,
    pdfParseWarmWorkers: e.PDF_PARSE_WARM_WORKERS,
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY,
    productId: e.PRODUCT_ID,
    mcpEnabled: e.MCP_ENABLED,
    mcpInlineMaxBytes: e.MCP_INLINE_MAX_BYTES,
    metricsPublic: e.METRICS_PUBLIC,
    shutdownDrainMs: e.SHUTDOWN_DRAIN_MS,
    x402: x402Config(e),
    stripe,
    oidc,
    signingEngine: e.SIGNING_ENGINE,
    documenso,
    storageDriver: e.STORAGE_DRIVER,
    s3,
    generatedSecrets: Object.freeze(generated),
    dataDirSecrets: Object.freeze(kept),
  });
}
