import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify';

/** A route's config as Fastify keeps it: its own options, with its pattern and method added. */
export type RouteConfig = FastifyContextConfig & { url?: string; method?: string };

declare module 'fastify' {
  interface FastifyRequest {
    /** `routeOptions.config` read once per request (routeConfigOf); null until the first read. */
    routeConfigRead: RouteConfig | null;
  }
}

/**
 * `request.routeOptions` builds a new object of a dozen fields on every read, and half a dozen hooks
 * read it on every request (security headers, auth, idempotency, x402, metrics, the access line). The
 * config it carries is the route's own, the same object every time, with the route's pattern as `url`
 * (undefined when no route matched): read once, kept on the request.
 */
export function routeConfigOf(request: FastifyRequest): RouteConfig {
  return (request.routeConfigRead ??= request.routeOptions.config as RouteConfig);
}

/** Declares the slot on every request (the same shape for all: no per-request property added later). */
export function registerRouteConfig(app: FastifyInstance): void {
  app.decorateRequest('routeConfigRead', null);
}
