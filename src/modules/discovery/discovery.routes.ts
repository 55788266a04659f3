import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { renderLlmsTxt, type RouteEntry } from '../../http/openapi.js';

export function discoveryRoutes(deps: { version: string; publicUrl: string; ping: () => Promise<void>; routeTable: RouteEntry[] }) {
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
      llms ??= renderLlmsTxt(deps.routeTable, { publicUrl: deps.publicUrl });
      return reply.type('text/plain; charset=utf-8').send(llms);
    });
  };
}
