import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Starts draining (on SIGTERM): GET /health/ready answers 503 so load balancers take this node out
     * of rotation, while every request, in flight or new, is still served until the server closes.
     */
    startDraining(): void;
  }
}

/** Decorates the app with startDraining(); returns whether it is ready (not draining), for /health/ready. */
export function registerDrain(app: FastifyInstance): { ready: () => boolean } {
  let draining = false;
  app.decorate('startDraining', () => {
    draining = true;
  });
  // Keep-alive clients let go of this node's connections as their requests complete, and reconnect elsewhere.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining) reply.header('connection', 'close');
    done(null, payload);
  });
  return { ready: () => !draining };
}
