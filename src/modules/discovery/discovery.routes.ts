import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../errors.js';
import { renderLlmsTxt, type RouteEntry } from '../../http/openapi.js';
import { errorResponses } from '../../http/route-docs.js';
import { ZMcpManifest, mcpManifest, renderMcpLlms, type McpDiscovery } from './mcp-manifest.js';

export function discoveryRoutes(deps: { version: string; publicUrl: string; ping: () => Promise<void>; routeTable: RouteEntry[]; mcp: McpDiscovery }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    let llms: string | undefined;

    r.get('/health', {
      config: { rateLimit: false },
      schema: {
        operationId: 'health',
        tags: ['Discovery'],
        summary: 'Liveness and database reachability',
        response: {
          200: z.object({ status: z.literal('ok'), version: z.string() }),
          503: z.object({ status: z.literal('unavailable'), version: z.string(), code: z.literal('SERVICE_UNAVAILABLE'), error: z.string() }),
        },
      },
      handler: async (_request, reply) => {
        try {
          await deps.ping();
          return { status: 'ok' as const, version: deps.version };
        } catch {
          return reply.code(503).send({ status: 'unavailable' as const, version: deps.version, code: 'SERVICE_UNAVAILABLE' as const, error: 'The database is unreachable' });
        }
      },
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
