import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * One access-log line per request, written when it completes: request id (the child logger's
 * binding), method, URL, status and time taken. Fastify's default writes two (`incoming request` and
 * `request completed`) and serializes the request each time; at info level, the default, that was a
 * large part of a cheap read's cost. Errors are still logged as before (a 5xx by the error handler
 * with its stack; a response that failed while being sent by Fastify, below).
 */
export class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) return super.requestCompleted(error, request, reply);
    reply.log.info({ method: request.method, url: request.url, statusCode: reply.statusCode, responseTime: reply.elapsedTime }, 'request completed');
  }
}
