import type { FastifyInstance } from 'fastify';
import type { MetricsRegistry } from './metrics.js';

/** GET /metrics in Prometheus' text format: the operator's bearer (as /ops) unless METRICS_PUBLIC=true. */
export function metricsRoutes(deps: { metrics: Pick<MetricsRegistry, 'render' | 'contentType'>; public: boolean }) {
  return async function (app: FastifyInstance): Promise<void> {
    app.get('/metrics', { config: { auth: deps.public ? 'none' : 'operator' }, schema: { hide: true } }, async (_request, reply) =>
      reply.type(deps.metrics.contentType).send(await deps.metrics.render()),
    );
  };
}
