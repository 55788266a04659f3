import type { FastifyInstance } from 'fastify';
import { routeConfigOf } from './route-config.js';

/** The route label of a request no route matched (404s, 405s): one label, whatever the URL. */
export const UNMATCHED_ROUTE = 'unmatched';

export type RequestObserver = (method: string, route: string, statusCode: number, seconds: number) => void;

/** Counts every answered request by its route's pattern (`/v1/envelopes/:id`), never by its URL. */
export function registerRequestMetrics(app: FastifyInstance, observe: RequestObserver): void {
  app.addHook('onResponse', (request, reply, done) => {
    observe(request.method, routeConfigOf(request).url ?? UNMATCHED_ROUTE, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}
