import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { rootLoggerOf } from './request-logger.js';
import { routeConfigOf } from './route-config.js';

/** A link token (lib/link-tokens.ts: 43 base64url characters) as a whole path segment. */
const TOKEN_SEGMENT = /(?<=\/)[A-Za-z0-9_-]{43}(?=\/|$)/g;

/**
 * The URL as the log keeps it. Signing, verification and sign-in links carry their credential in the
 * path (`/sign/<token>`), and a query may carry one too (OpenID Connect's code and state): a log line
 * must not hand them to whoever reads the logs. So the query is never logged, a route with a `:token`
 * is logged as its pattern, and a path no route names exactly (a 404, a wildcard) has its token-shaped
 * segments replaced. Every other path (ids included) is kept as it is, with no work on it: this runs
 * on every request.
 */
export function loggedUrl(url: string, route: string | undefined): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (route !== undefined && !route.includes('*')) return route.includes(':token') ? route : path;
  return path.replace(TOKEN_SEGMENT, ':token');
}

/**
 * One access-log line per request, written when it completes: request id, method, route pattern, URL
 * (credentials left out: loggedUrl), status and time taken. It goes through the root logger with the
 * id in the line, as the request's child would write it, so a request that logs nothing else never
 * makes its child (request-logger.ts).
 * Fastify's default writes two (`incoming request` and `request completed`) and serializes the
 * request each time; at info level, the default, that was a large part of a cheap read's cost. Errors
 * are still logged as before (a 5xx by the error handler with its stack; a response that failed while
 * being sent by Fastify, below).
 */
export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) return super.requestCompleted(error, request, reply);
    const route = routeConfigOf(request).url;
    rootLoggerOf(request.log).info(
      { [this.requestIdLogLabel]: request.id, method: request.method, route, url: loggedUrl(request.url, route), statusCode: reply.statusCode, responseTime: reply.elapsedTime },
      'request completed',
    );
  }
}
