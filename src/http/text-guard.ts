import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

const NUL = '\u0000';
const MESSAGE = 'must not contain the NUL character (U+0000)';

/**
 * The path of the first string (or object key) under `value` that holds a NUL character, as
 * `<at>.a.0.b`; undefined when none does.
 */
export function nulPath(value: unknown, at: string): string | undefined {
  if (typeof value === 'string') return value.includes(NUL) ? at : undefined;
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i], `${at}.${i}`);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    if (key.includes(NUL)) return `${at}.${key.replaceAll(NUL, '\\0')}`;
    const found = nulPath(item, `${at}.${key}`);
    if (found) return found;
  }
  return undefined;
}

/** Refuses `value` (400 VALIDATION_ERROR naming the path) when a string in it holds a NUL character. */
export function refuseNul(value: unknown, at: string): void {
  const path = nulPath(value, at);
  if (path) throw new AppError('VALIDATION_ERROR', `${path}: ${MESSAGE}`, { details: [{ path, message: MESSAGE }] });
}

/**
 * PostgreSQL refuses U+0000 in text and in jsonb, so a NUL anywhere in what a caller sends (a decline
 * reason, a typed signature, a field value, a title, a name, a form field, a query value) would fail
 * its statement and answer 500. One rule, here at the edge, for every route: the body and query are
 * refused 400 VALIDATION_ERROR first, before the route's own validation, so no field has to remember
 * it. Path values are left to their routes: each is an id or a token checked by its format, or compared
 * in memory, so a NUL there names nothing and is that route's 404 (a dashboard page stays a page). The multipart `payload` is JSON inside a part, parsed by readUpload,
 * which applies the same rule; a raw body (a PDF, Stripe's signed bytes) is not text and is left alone.
 */
export function registerTextGuard(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      refuseNul(request.query, 'querystring');
      if (!/^\s*multipart\//i.test(request.headers['content-type'] ?? '')) refuseNul(request.body, 'body');
    } catch (err) {
      return done(err as Error);
    }
    done();
  });
}
