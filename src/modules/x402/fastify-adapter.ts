import type { HTTPAdapter } from '@x402/core/server';
import type { FastifyRequest } from 'fastify';

/**
 * x402 ships adapters for Express and Hono only; this is Fastify's, in their shape. It also maps the
 * Alt header: @x402/core reads only PAYMENT-SIGNATURE, and SPEC.md accepts `x-payment` as well.
 */
export function fastifyAdapter(request: FastifyRequest, publicUrl: string): HTTPAdapter {
  const header = (name: string): string | undefined => {
    const value = request.headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  };
  const path = request.url.split('?')[0];
  return {
    getHeader: (name) => (name.toLowerCase() === 'payment-signature' ? paymentHeaderOf(request) : header(name)),
    getMethod: () => request.method,
    getPath: () => path,
    // The public address, not the Host header: the resource a payer signs for must be ours.
    getUrl: () => `${publicUrl}${request.url}`,
    getAcceptHeader: () => header('accept') ?? '',
    getUserAgent: () => header('user-agent') ?? '',
    getQueryParams: () => (request.query ?? {}) as Record<string, string | string[]>,
    getQueryParam: (name) => (request.query as Record<string, string | string[]> | undefined)?.[name],
    getBody: () => request.body,
  };
}

/** PAYMENT-SIGNATURE, else SPEC.md's Alt name `x-payment`. */
export function paymentHeaderOf(request: FastifyRequest): string | undefined {
  for (const name of ['payment-signature', 'x-payment']) {
    const value = request.headers[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) return first;
  }
  return undefined;
}
