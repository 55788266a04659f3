import { randomUUID } from 'node:crypto';
import path from 'node:path';
import fastifyRateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import FindMyWay from 'find-my-way';
import type { Container } from './container.js';
import { registerAuth } from './http/auth.js';
import { RequestLog } from './http/request-log.js';
import { registerSecurityHeaders } from './http/security-headers.js';
import { requestLoggerFactory } from './http/request-logger.js';
import { registerRouteConfig } from './http/route-config.js';
import { registerDrain } from './http/drain.js';
import { registerRequestMetrics } from './http/metrics.js';
import { runWithRequestId } from './jobs/request-scope.js';
import { serializerCompiler } from './http/serializer.js';
import { createAuthFailureCounter } from './http/auth-failures.js';
import { ipBucket, trustProxyOption } from './http/client-address.js';
import { redisRateLimitStore } from './http/rate-limit-store.js';
import { closeRedis, openRedis } from './providers/redis/redis.js';
import { apiKeyResolver } from './modules/account/api-key-resolver.js';
import { walletJwtResolver } from './modules/auth/wallet-jwt-resolver.js';
import { registerX402Gate, withPaymentOffer, x402Resolver } from './modules/x402/x402-resolver.js';
import { authRoutes } from './modules/auth/auth.routes.js';
import { errorBody, toAppError } from './http/errors.js';
import { AppError } from './errors.js';
import { registerMultipart } from './http/multipart.js';
import { registerBodyGuard } from './http/body-guard.js';
import { registerTextGuard } from './http/text-guard.js';
import { sha256Hex } from './lib/crypto.js';
import { registerIdempotency } from './http/idempotency.js';
import { collectRoutes, registerOpenApi } from './http/openapi.js';
import { accountRoutes } from './modules/account/account.routes.js';
import { createLogoService } from './modules/account/logo.js';
import { logoRoutes } from './modules/account/logo.routes.js';
import { dashboardRoutes } from './modules/dashboard/dashboard.routes.js';
import { billingSection } from './modules/dashboard/billing.routes.js';
import { envelopeActionsSection } from './modules/dashboard/envelope-actions.routes.js';
import { envelopeNewSection } from './modules/dashboard/envelope-new.routes.js';
import { envelopePagesSection } from './modules/dashboard/envelope-pages.routes.js';
import { editorPagesSection } from './modules/editor/editor-pages.routes.js';
import { keysSection } from './modules/dashboard/keys.routes.js';
import { overviewSection } from './modules/dashboard/overview.routes.js';
import { productPagesSection } from './modules/dashboard/products.routes.js';
import { webhookPagesSection } from './modules/dashboard/webhooks.routes.js';
import { sessionCookieResolver } from './modules/dashboard/session-resolver.js';
import { prepareLinkResolver } from './modules/editor/prepare-link-resolver.js';
import { prepareLinksRoutes } from './modules/editor/prepare-links.routes.js';
import { settingsSection } from './modules/dashboard/settings.routes.js';
import { signInRoutes } from './modules/dashboard/sign-in.routes.js';
import { discoveryRoutes, type EngineHealth } from './modules/discovery/discovery.routes.js';
import { samplesRoutes } from './modules/samples/samples.routes.js';
import { MCP_MAX_BATCH, createMcpEndpoint } from './modules/mcp/mcp-server.js';
import { mcpTools } from './modules/mcp/mcp-tools.js';
import { mcpRoutes } from './modules/mcp/mcp.routes.js';
import { x402CallPricing } from './modules/x402/x402-resolver.js';
import { envelopesRoutes } from './modules/envelopes/envelopes.routes.js';
import { opsEnvelopeRoutes } from './modules/ops/ops-envelopes.routes.js';
import { opsWebhookRoutes } from './modules/ops/ops-webhooks.routes.js';
import { opsRoutes } from './modules/ops/ops.routes.js';
import { metricsRoutes } from './modules/ops/metrics.routes.js';
import { signingPageRoutes } from './modules/signing/signing.page-routes.js';
import { createPageLocale } from './modules/signing/page-locale.repo.js';
import { embedRoutes } from './modules/embed/embed.routes.js';
import { envelopeAttachmentsRoutes } from './modules/envelopes/attachments.routes.js';
import { createEmbed } from './container-embed.js';
import { signingRoutes } from './modules/signing/signing.routes.js';
import { templatesRoutes } from './modules/templates/templates.routes.js';
import { bulkSendsRoutes } from './modules/bulk-sends/bulk-sends.routes.js';
import { stripeWebhookRoutes } from './modules/stripe/stripe-webhook.routes.js';
import { documensoWebhookRoutes } from './modules/envelopes/documenso-webhook.routes.js';
import { verificationsRoutes } from './modules/verifications/verifications.routes.js';
import { verifyPageRoutes } from './modules/verifications/verify.page-routes.js';
import { documentsRoutes } from './modules/documents/documents.routes.js';
import { verifyDocumentPageRoutes } from './modules/documents/verify-document.page-routes.js';
import { docsRoutes } from './modules/docs/docs.routes.js';
import { webhooksRoutes } from './modules/webhooks/webhooks.routes.js';

export const JSON_BODY_LIMIT = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the HTTP app around a container; does not listen (tests use `inject` or listen themselves). */
export async function buildApp(c: Container): Promise<FastifyInstance> {
  const { config } = c;
  const app = Fastify({
    loggerInstance: c.logger as FastifyBaseLogger,
    logController: new RequestLog(),
    childLoggerFactory: requestLoggerFactory,
    bodyLimit: JSON_BODY_LIMIT,
    trustProxy: trustProxyOption(config.trustProxy),
    // A caller's own X-Request-Id is kept when it is sane, so logs on both sides line up.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    return503OnClosing: true,
  });
  registerRouteConfig(app);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  // JSON bodies keep their raw text for the idempotency fingerprint; an empty body is no body.
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  // JSON only: Fastify's built-in text/plain parser would let a string body reach validation.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    request.bodyHash = sha256Hex(text);
    if (text.trim() === '') return done(null, undefined);
    defaultJson(request, text, (err, parsed) => (err ? done(new AppError('INVALID_JSON', 'The request body is not valid JSON'), undefined) : done(null, parsed)));
  });

  // `curl -d '{…}'` sends a JSON document as form-urlencoded; read it as the JSON it is.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, body, done) => {
    const text = (body as string).trim();
    if (!text.startsWith('{')) return done(new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send JSON with Content-Type: application/json'), undefined);
    request.bodyHash = sha256Hex(text);
    defaultJson(request, text, (err, parsed) => (err ? done(new AppError('INVALID_JSON', 'The request body is not valid JSON'), undefined) : done(null, parsed)));
  });

  // Room for the payload part and the multipart framing around the PDFs.
  const multipartLimit = config.maxPdfBytes + 1024 * 1024;
  const uploads = registerMultipart(app, { bodyLimit: multipartLimit, maxFileBytes: config.maxPdfBytes, dataDir: config.dataDir });
  registerTextGuard(app);
  // POST /mcp carries create_envelope's PDF as base64 in its JSON: 4 characters per 3 bytes, plus the rest of the call.
  const mcpBodyLimit = Math.ceil(config.maxPdfBytes / 3) * 4 + JSON_BODY_LIMIT;
  // A raw application/pdf body (POST /v1/documents/verify) may be as large as one PDF; an upload only
  // where a route takes one (anywhere else it is refused unread, 415).
  const multipartLimitAt = (url: string, method: string) => (uploads.accepts(method, url) ? multipartLimit : JSON_BODY_LIMIT);
  registerBodyGuard(app, {
    limitOf: (type, url, method) => (url === '/mcp' ? mcpBodyLimit : type?.startsWith('multipart/form-data') ? multipartLimitAt(url, method) : type?.startsWith('application/pdf') ? config.maxPdfBytes : JSON_BODY_LIMIT),
  });

  // Synchronous, as are the other onSend hooks: the answer is then written within reply.send(), before
  // a handler that called send() without returning the reply settles (Fastify would send it again).
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });
  // After the body is parsed, around the handler: a job enqueued for the request carries its id (jobs/request-scope.ts).
  app.addHook('preHandler', (request, _reply, done) => runWithRequestId(request.id, done));
  registerRequestMetrics(app, c.metrics.observeRequest);
  const drain = registerDrain(app);

  app.setErrorHandler(async (err, request, reply) => {
    let appErr = toAppError(err);
    // A limit of its own (maxBytes: the logo's) is kept; Fastify's generic one is the PDF limit for uploads.
    if (appErr.code === 'PAYLOAD_TOO_LARGE' && appErr.extras.maxBytes === undefined && /^(multipart\/form-data|application\/pdf)/.test(request.headers['content-type'] ?? '')) {
      appErr = new AppError('PDF_TOO_LARGE', `The upload exceeds the ${config.maxPdfBytes}-byte limit`, { maxBytes: config.maxPdfBytes });
    }
    appErr = await withPaymentOffer(appErr, request, c.x402, config.publicUrl);
    if (appErr.code === 'INTERNAL_ERROR') request.log.error({ err }, 'unhandled error');
    else if (appErr.status >= 500) request.log.warn({ err, code: appErr.code }, 'upstream error');
    const body = JSON.stringify(errorBody(appErr, request.id));
    await app.settleIdempotencyOnError(request, appErr, body);
    return reply.code(appErr.status).headers(appErr.headers).type('application/json; charset=utf-8').send(body);
  });

  // 404 for unknown paths, 405 with Allow for a known path under another method.
  const known = FindMyWay();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) known.on(method as FindMyWay.HTTPMethod, route.url, () => {});
  });
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0];
    const allowed = (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).filter((m) => known.find(m, path));
    const err = allowed.length
      ? new AppError('METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}`, {}, { Allow: allowed.join(', ') })
      : new AppError('NOT_FOUND', `No route ${request.method} ${path}`);
    return reply.code(err.status).headers(err.headers).type('application/json; charset=utf-8').send(JSON.stringify(errorBody(err, request.id)));
  });

  registerSecurityHeaders(app);
  // REDIS_URL: the rate-limit and auth-failure counters are shared by every node; unset, each process counts alone.
  const redis = config.redisUrl ? await openRedis({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix, log: c.logger.child({ component: 'redis' }), observer: c.metrics }) : undefined;
  if (redis) app.addHook('onClose', () => closeRedis(redis));
  const x402Http = { db: c.db, x402: c.x402, accounts: c.services.account, audit: c.services.audit, publicUrl: config.publicUrl, sandboxLimit: config.sandboxLimit };
  registerAuth(app, {
    resolvers: [apiKeyResolver({ db: c.db, accounts: c.repos.accounts, cache: c.apiKeyCache }), walletJwtResolver({ tokens: c.walletTokens }),
      // A prepare link's explicit token first: a browser signed in to the dashboard may open one too.
      prepareLinkResolver({ db: c.db, links: c.prepareLinks }), sessionCookieResolver({ db: c.db, sessions: c.dashboard.sessions, csrf: c.dashboard.csrf }),
      // Last: a bearer credential wins over a payment header.
      x402Resolver(x402Http),
    ],
    opsToken: config.opsToken,
    s2sKey: config.s2sKey,
    failures: createAuthFailureCounter({ max: config.authFailureLimit, windowMs: config.authFailureWindowMs, redis }),
  });
  await app.register(fastifyRateLimit, {
    global: true,
    max: config.rateLimitMax,
    timeWindow: config.rateLimitWindowMs,
    enableDraftSpec: true,
    ...(redis && { store: redisRateLimitStore(redis) }),
    // Runs after authentication, so the budget is per customer (per IP, an IPv6 client per /64, for unauthenticated routes).
    keyGenerator: (request) => (request.actor ? `customer:${request.actor.customerId}` : `ip:${ipBucket(request.ip)}`),
    errorResponseBuilder: (_request, ctx) => new AppError('RATE_LIMITED', `Rate limit exceeded; retry in ${ctx.after}`, { retryAfterSeconds: Math.ceil(ctx.ttl / 1000) }),
  });
  // A payment is verified (and its payer's customer made) before the Idempotency-Key is reserved under it.
  registerX402Gate(app, x402Http);
  registerIdempotency(app, { idempotency: c.idempotency, repo: c.repos.idempotency, db: c.db });

  const routeTable = collectRoutes(app);
  await registerOpenApi(app, { version: c.version, publicUrl: config.publicUrl });

  // One list of MCP tools: what POST /mcp serves is what /.well-known/mcp.json and /llms.txt name.
  const tools = mcpTools({
    envelopes: c.envelopes,
    maxPdfBytes: config.maxPdfBytes,
    publicUrl: config.publicUrl,
    inlineMaxBytes: config.mcpInlineMaxBytes,
    templates: c.templates,
    webhooks: c.webhooks,
    verifications: c.verifications,
    account: c.services.account,
  });
  const mcp = {
    enabled: config.mcpEnabled,
    tools,
    x402: config.x402 && { network: config.x402.network, minPriceMicros: config.x402.minPriceMicros },
    limits: { maxBatch: MCP_MAX_BATCH, inlineMaxBytes: config.mcpInlineMaxBytes },
  };
  const engine = () => ({ name: c.engine.name, ...(c.engine.circuit() ? { circuit: c.engine.circuit() } : {}) }) as EngineHealth;
  await app.register(discoveryRoutes({ version: c.version, publicUrl: config.publicUrl, ping: () => c.database.ping(), storage: () => c.storage.check?.() ?? Promise.resolve(), ready: drain.ready, routeTable, mcp, engine, seal: c.sealCertificate.checked }));
  await app.register(samplesRoutes());
  await app.register(
    mcpRoutes({
      enabled: config.mcpEnabled,
      endpoint: createMcpEndpoint({ db: c.db, idempotency: c.idempotency, tools, version: c.version, inlineMaxBytes: config.mcpInlineMaxBytes }),
      pricing: x402CallPricing(x402Http),
      bodyLimit: mcpBodyLimit,
    }),
  );
  await app.register(authRoutes({ auth: c.auth }));
  const logo = createLogoService({ db: c.db, storage: c.storage, accounts: c.repos.accounts, account: c.services.account, audit: c.services.audit, uploadsSince: (db, id, since) => c.repos.audit.countSince(db, id, 'account.logo.set', since) });
  await app.register(logoRoutes({ db: c.db, logo, commitMutation: c.commitMutation }));
  await app.register(accountRoutes({ db: c.db, account: c.services.account, summary: c.services.summary, products: c.services.products, commitMutation: c.commitMutation }));
  await app.register(
    envelopesRoutes({ db: c.db, envelopes: c.envelopes, links: c.recipientLinks, handover: c.recipientHandover, fieldEdits: c.fieldEdits, commitMutation: c.commitMutation, maxPdfBytes: config.maxPdfBytes }),
  );
  await app.register(envelopeAttachmentsRoutes({ db: c.db, attachments: c.envelopeAttachments }));
  await app.register(prepareLinksRoutes({ db: c.db, links: c.prepareLinks, envelopes: c.envelopes, commitMutation: c.commitMutation }));
  await app.register(templatesRoutes({ db: c.db, templates: c.templates, commitMutation: c.commitMutation, maxPdfBytes: config.maxPdfBytes }));
  await app.register(bulkSendsRoutes({ db: c.db, bulkSends: c.bulkSends, commitMutation: c.commitMutation, maxBytes: config.bulkSend.maxBytes, maxRows: config.bulkSend.maxRows }));
  await app.register(webhooksRoutes({ db: c.db, webhooks: c.webhooks, commitMutation: c.commitMutation }));
  await app.register(verificationsRoutes({ db: c.db, verifications: c.verifications, commitMutation: c.commitMutation }));
  await app.register(verifyPageRoutes({ db: c.db, verifications: c.verifications }));
  await app.register(
    documentsRoutes({
      db: c.db,
      documents: c.documents,
      maxPdfBytes: config.maxPdfBytes,
      rateLimit: { anonymous: config.verifyDocumentRateLimit, customer: config.rateLimitMax, windowMs: config.rateLimitWindowMs },
    }),
  );
  await app.register(verifyDocumentPageRoutes({ maxPdfBytes: config.maxPdfBytes }));
  await app.register(docsRoutes({ version: c.version, publicUrl: config.publicUrl }));
  await app.register(
    dashboardRoutes({
      db: c.db,
      accounts: c.repos.accounts,
      sessions: c.dashboard.sessions,
      csrf: c.dashboard.csrf,
      dashboardUrl: config.dashboardUrl,
      seal: c.sealCertificate.checked,
      sections: [
        signInRoutes({ signIn: c.dashboard.signIn, oidcName: config.oidc?.providerName, outboxDir: config.smtpUrl || config.env === 'production' ? undefined : path.resolve(config.dataDir, 'outbox') }),
        billingSection({ db: c.db, account: c.services.account, topUps: c.topUps, stripeApiUrl: config.stripe?.apiUrl }),
        overviewSection({ db: c.db, account: c.services.account, summary: c.services.summary, apiKeys: c.services.apiKeys, envelopes: c.envelopes, publicUrl: config.publicUrl }),
        keysSection({ db: c.db, apiKeys: c.services.apiKeys, apiKeyCache: c.apiKeyCache, publicUrl: config.publicUrl }),
        envelopeNewSection({ db: c.db, envelopes: c.envelopes, apiKeys: c.services.apiKeys, idempotency: c.idempotency, maxPdfBytes: config.maxPdfBytes }),
        envelopePagesSection({ db: c.db, envelopes: c.envelopes, apiKeys: c.services.apiKeys }),
        editorPagesSection({ db: c.db, envelopes: c.envelopes, templates: c.templates }),
        envelopeActionsSection({ db: c.db, envelopes: c.envelopes, links: c.recipientLinks, signing: c.signing, signingUrl: config.signingUrl }),
        webhookPagesSection({ db: c.db, webhooks: c.webhooks, apiKeys: c.services.apiKeys, publicUrl: config.publicUrl }),
        productPagesSection({ db: c.db, products: c.services.products, productId: config.productId }),
        settingsSection({ db: c.db, account: c.services.account, logo }),
      ],
    }),
  );
  await app.register(stripeWebhookRoutes({ stripeEvents: c.stripeEvents }));
  if (c.engine.webhookSecret) await app.register(documensoWebhookRoutes({ db: c.db, secret: c.engine.webhookSecret, syncOutside: c.engine.syncOutside, byNumericId: c.engine.byNumericId }));
  await app.register(signingRoutes({ signing: c.signing, attachmentMaxBytes: config.attachments.maxBytes }));
  const pageLocale = createPageLocale(c.db);
  await app.register(signingPageRoutes({ pageLocale }));
  await app.register(embedRoutes({ embed: createEmbed(c, config), commitMutation: c.commitMutation, pageLocale }));
  await app.register(opsEnvelopeRoutes({ db: c.db, envelopes: c.envelopes, refunds: c.refunds, commitMutation: c.commitMutation }));
  await app.register(opsWebhookRoutes({ db: c.db, webhooks: c.webhooks }));
  await app.register(metricsRoutes({ metrics: c.metrics, public: config.metricsPublic }));
  await app.register(opsRoutes({ db: c.db, ops: c.services.ops, commitMutation: c.commitMutation, apiKeyCache: c.apiKeyCache }));

  return app;
}
