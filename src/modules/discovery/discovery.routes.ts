import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../errors.js';
import { renderLlmsTxt, type RouteEntry } from '../../http/openapi.js';
import { errorResponses } from '../../http/route-docs.js';
import { within } from '../../lib/deadline.js';
import { ZMcpManifest, mcpManifest, renderMcpLlms, type McpDiscovery } from './mcp-manifest.js';

/** The signing engine as /health shows it: its name, and for documenso the circuit breaker's state (no credentials). */
export type EngineHealth = { name: 'local' | 'documenso'; circuit?: 'closed' | 'open' | 'half-open' };
const ZEngineHealth = z.object({
  name: z.enum(['local', 'documenso']),
  circuit: z.enum(['closed', 'open', 'half-open']).optional().describe('documenso only: open while Documenso is failing (calls answer 503 DOCUMENSO_UNAVAILABLE at once)'),
});

/** The sealing certificate as checked at start; absent until the process has checked it (main does before it listens). */
export type SealHealth = { certificate: 'development' | 'configured'; subject: string; notAfter: string; warnings: string[] };
const ZSealHealth = z
  .object({
    certificate: z.enum(['development', 'configured']).describe('development: the self-signed seal Signet made for itself (SIGNING_CERT_P12_PATH unset)'),
    subject: z.string(),
    notAfter: z.string().describe('when the certificate expires (ISO 8601)'),
    warning: z.string().optional().describe('what an operator should act on, e.g. "development seal: not trusted by PDF readers", or an expiry within 30 days'),
  })
  .describe('the certificate that seals completed PDFs, checked once at start');
const sealOf = (seal: SealHealth | undefined) =>
  seal && { certificate: seal.certificate, subject: seal.subject, notAfter: seal.notAfter, ...(seal.warnings.length ? { warning: seal.warnings.join('; ') } : {}) };

/** A dependency check that does not answer within this long has failed: /health must answer promptly. */
const HEALTH_CHECK_TIMEOUT_MS = 2_000;
const checked = (check: () => Promise<void>) => within(check(), HEALTH_CHECK_TIMEOUT_MS, () => new Error(`no answer within ${HEALTH_CHECK_TIMEOUT_MS} ms`));
/**
 * How long a storage check's outcome answers /health. The route is unauthenticated and unlimited, and
 * the S3 driver's check is a HeadBucket: without this anyone could make the node call the bucket (a
 * billed, rate-limited API) as often as they like. The database's ping stays live: it is local and cheap.
 */
const STORAGE_CHECK_REUSE_MS = 5_000;

/** `check`, run at most once per `reuseMs`: calls meanwhile (or while it runs) share its outcome. */
function reused(check: () => Promise<void>, reuseMs: number): () => Promise<void> {
  let last: { result: Promise<void>; settledAt?: number } | undefined;
  return () => {
    if (last && (last.settledAt === undefined || Date.now() - last.settledAt < reuseMs)) return last.result;
    const current: { result: Promise<void>; settledAt?: number } = { result: checked(check) };
    const settle = () => void (current.settledAt = Date.now());
    current.result.then(settle, settle);
    last = current;
    return current.result;
  };
}

const ZChecks = z.object({ database: z.enum(['ok', 'failed']), storage: z.enum(['ok', 'failed']) }).describe('each dependency this node needs: failed when it did not answer within 2 s');
const UNREACHABLE = { database: 'The database is unreachable', storage: 'The document storage is unreachable', both: 'The database and the document storage are unreachable' };

export function discoveryRoutes(deps: {
  version: string;
  publicUrl: string;
  ping: () => Promise<void>;
  /** The document store's check (BlobStorage.check). */
  storage: () => Promise<void>;
  /** False once the node drains for shutdown. */
  ready: () => boolean;
  routeTable: RouteEntry[];
  mcp: McpDiscovery;
  engine: () => EngineHealth;
  seal: () => SealHealth | undefined;
}) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    let llms: string | undefined;
    const storageCheck = reused(deps.storage, STORAGE_CHECK_REUSE_MS);

    r.get('/health', {
      config: { rateLimit: false },
      schema: {
        operationId: 'health',
        tags: ['Discovery'],
        summary: 'Liveness: the database and the document storage answer; which signing engine serves, and the sealing certificate',
        response: {
          200: z.object({ status: z.literal('ok'), version: z.string(), engine: ZEngineHealth, seal: ZSealHealth.optional(), checks: ZChecks }),
          503: z.object({ status: z.literal('unavailable'), version: z.string(), engine: ZEngineHealth, seal: ZSealHealth.optional(), checks: ZChecks, code: z.literal('SERVICE_UNAVAILABLE'), error: z.string() }),
        },
      },
      handler: async (request, reply) => {
        const [database, storage] = await Promise.allSettled([checked(deps.ping), storageCheck()]);
        const state = (res: PromiseSettledResult<void>) => (res.status === 'fulfilled' ? ('ok' as const) : ('failed' as const));
        const checks = { database: state(database), storage: state(storage) };
        const seal = sealOf(deps.seal());
        const base = { version: deps.version, engine: deps.engine(), ...(seal ? { seal } : {}), checks };
        if (checks.database === 'ok' && checks.storage === 'ok') return { status: 'ok' as const, ...base };
        const reason = (res: PromiseSettledResult<void>) => (res.status === 'rejected' ? String((res.reason as Error)?.message ?? res.reason) : undefined);
        request.log.warn({ database: reason(database), storage: reason(storage) }, 'health check failed');
        const error = checks.database === 'failed' ? (checks.storage === 'failed' ? UNREACHABLE.both : UNREACHABLE.database) : UNREACHABLE.storage;
        return reply.code(503).send({ status: 'unavailable' as const, ...base, code: 'SERVICE_UNAVAILABLE' as const, error });
      },
    });

    // Readiness for a load balancer: false from SIGTERM on, while the node drains (README: Operations).
    r.get('/health/ready', {
      config: { rateLimit: false },
      schema: {
        operationId: 'healthReady',
        tags: ['Discovery'],
        summary: 'Readiness: 503 once the node is draining for shutdown (take it out of rotation); it still serves until it closes',
        response: { 200: z.object({ ready: z.literal(true) }), 503: z.object({ ready: z.literal(false) }) },
      },
      handler: async (_request, reply) => (deps.ready() ? { ready: true as const } : reply.code(503).send({ ready: false as const })),
    });

    r.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

    r.get('/llms.txt', { schema: { hide: true } }, async (_request, reply) => {
      llms ??= [renderLlmsTxt(deps.routeTable, { publicUrl: deps.publicUrl }), ...(deps.mcp.enabled ? [renderMcpLlms(deps.mcp, { publicUrl: deps.publicUrl })] : [])].join('\n');
      return reply.type('text/plain; charset=utf-8').send(llms);
    });

    const manifest = mcpManifest(deps.mcp, { publicUrl: deps.publicUrl });
    r.get('/.well-known/mcp.json', {
      schema: {
        operationId: 'getMcpManifest',
        tags: ['Discovery'],
        summary: 'The MCP endpoint for AI agents: its URL, pricing, accepted credentials and tool names (404 when MCP is disabled)',
        response: { 200: ZMcpManifest, ...errorResponses(['NOT_FOUND']) },
      },
      handler: async () => {
        if (!deps.mcp.enabled) throw new AppError('NOT_FOUND', 'MCP is disabled on this server (MCP_ENABLED=false)');
        return manifest;
      },
    });
  };
}
