import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';
import { routeConfigOf } from './route-config.js';

type Headers = Record<string, string>;

declare module 'fastify' {
  interface RouteShorthandOptions {
    /** This route's helmet options, merged over the defaults (e.g. a page's own Content-Security-Policy). */
    helmet?: HelmetOptions;
  }
  interface FastifyContextConfig {
    /** Filled in once the app is ready; see registerSecurityHeaders. */
    securityHeaders?: { headers: Headers };
  }
}

/**
 * Helmet's headers for one set of options, computed once: helmet's middleware run against a response
 * that only records them. Every option we use is static; a directive computed per request (a function,
 * e.g. a CSP nonce) cannot be precomputed and is refused at start-up.
 */
export function helmetHeaders(options: HelmetOptions): Headers {
  const directives = typeof options.contentSecurityPolicy === 'object' ? options.contentSecurityPolicy.directives : undefined;
  for (const [name, values] of Object.entries(directives ?? {})) {
    if (values && typeof values === 'object' && [...values].some((v) => typeof v === 'function')) {
      throw new Error(`CSP directive ${name}: per-request values are not supported`);
    }
  }
  const headers: Headers = {};
  const recorder = {
    setHeader: (name: string, value: unknown) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (err?: unknown) => {
    if (err) throw err;
  });
  return headers;
}

/**
 * Helmet's security headers on every response (errors and 404s included), with a route's own `helmet`
 * options merged over the defaults. @fastify/helmet rebuilt helmet's middleware on every request; the
 * headers depend only on the options, so each route's set is computed once, when the app is ready (by
 * then every onRoute hook has run, including those of plugins that set a default `helmet` for their
 * routes), and a request only copies it.
 */
export function registerSecurityHeaders(app: FastifyInstance): void {
  const defaults = helmetHeaders({});
  const pending: (() => void)[] = [];
  const memo = new Map<HelmetOptions, Headers>();

  app.addHook('onRoute', (route) => {
    const slot = { headers: defaults };
    pending.push(() => {
      const own = route.helmet;
      if (!own) return;
      let headers = memo.get(own);
      if (!headers) memo.set(own, (headers = helmetHeaders(own)));
      slot.headers = headers;
    });
    route.config = { ...route.config, securityHeaders: slot };
  });
  app.addHook('onReady', (done) => {
    for (const resolve of pending.splice(0)) resolve();
    done();
  });
  // First onRequest hook: an answer refused by a later hook (401, 429) carries the headers too.
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(routeConfigOf(request).securityHeaders?.headers ?? defaults);
    done();
  });
}
