import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { ActorResolver } from '../../http/auth.js';
import type { PrepareLinks } from './prepare-links.service.js';

export const PREPARE_TOKEN_HEADER = 'x-prepare-token';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A /v1 route of one envelope that the field editor opened by a prepare link may call (its field routes and send). */
    prepareLink?: boolean;
  }
}

/**
 * A prepare link's token (X-Prepare-Token) as a credential, on the routes that say so and only when no
 * bearer is sent. It is good for its own draft only: any other envelope id is 404, as another customer's
 * would be. A header, not a cookie, so no other site can make a browser send it (no CSRF).
 */
export function prepareLinkResolver(deps: { db: Db; links: Pick<PrepareLinks, 'resolve'> }): ActorResolver {
  return async (request, bearer) => {
    const token = request.headers[PREPARE_TOKEN_HEADER];
    if (bearer !== undefined || typeof token !== 'string' || !request.routeOptions.config.prepareLink) return undefined;
    const link = await deps.links.resolve(deps.db, token);
    if ((request.params as { id?: string }).id !== link.envelopeId) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
    return { customerId: link.customerId, mode: link.mode, via: 'prepare_link', keyId: null };
  };
}
