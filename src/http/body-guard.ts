import type { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** How much of a refused body is read and thrown away so the client gets to read the answer. */
export const DRAIN_MAX_BYTES = 64 * 1024 * 1024;
export const DRAIN_MAX_MS = 10_000;

const REFUSED_CONTINUE = Symbol('refusedContinue');
type Raw = IncomingMessage & { [REFUSED_CONTINUE]?: boolean };

/**
 * Lets a client whose body is refused (413 and every other answer sent before the body was read) read
 * that answer. Closing the socket while the client is still sending makes the kernel reset the
 * connection, and the client sees EPIPE or ECONNRESET instead of the 413. So:
 * - `Expect: 100-continue` with a Content-Length over the limit is answered without a 100 Continue: the
 *   body is never sent, and Node closes the connection after the answer;
 * - otherwise the rest of the body is read and discarded after the answer, up to DRAIN_MAX_BYTES or
 *   DRAIN_MAX_MS, and the connection stays usable; a client still sending past that is cut off.
 * Fastify itself refuses a Content-Length over the limit before reading any of the body.
 */
export function registerBodyGuard(app: FastifyInstance, opts: { limitOf: (contentType: string | undefined, path: string, method: string) => number }): void {
  app.server.on('checkContinue', (req: Raw, res: ServerResponse) => {
    const length = Number(req.headers['content-length']);
    if (length > opts.limitOf(req.headers['content-type'], (req.url ?? '').split('?')[0], req.method ?? '')) req[REFUSED_CONTINUE] = true;
    else res.writeContinue();
    app.server.emit('request', req, res);
  });

  // Synchronous: an async onSend hook on every response defers the write past reply.send().
  app.addHook('onSend', (request, reply, payload, done) => {
    const raw = request.raw as Raw;
    // Only a real socket whose request body is still arriving has anything to drain (an injected
    // request's socket is a stand-in without destroy()).
    if (raw.complete === false && !raw[REFUSED_CONTINUE] && raw.socket instanceof Socket) {
      // Fastify asks to close after a body it stopped reading; we read the rest instead (bounded).
      reply.removeHeader('connection');
      drainBounded(request);
    }
    done(null, payload);
  });
}

function drainBounded(request: FastifyRequest): void {
  const raw = request.raw;
  let drained = 0;
  const cutOff = () => {
    cleanup();
    raw.socket?.destroy();
  };
  const timer = setTimeout(cutOff, DRAIN_MAX_MS);
  timer.unref();
  const onData = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_MAX_BYTES) cutOff();
  };
  const cleanup = () => {
    clearTimeout(timer);
    raw.removeListener('data', onData);
    raw.removeListener('end', cleanup);
    raw.socket?.removeListener('close', cleanup);
  };
  raw.on('data', onData);
  raw.on('end', cleanup);
  raw.socket?.on('close', cleanup);
  raw.resume();
}
