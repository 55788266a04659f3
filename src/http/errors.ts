import type { FastifyError } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { pgErrorCode } from '../db/client.js';
import { AppError } from '../errors.js';

/** Body of an error reply. The request id rides along so a caller can quote it to an operator. */
export function errorBody(err: AppError, requestId?: string): Record<string, unknown> {
  return { error: err.message, code: err.code, ...err.extras, ...(requestId ? { requestId } : {}) };
}

type ZodIssueLike = { path?: PropertyKey[]; message: string; instancePath?: string };

function validationDetails(err: FastifyError): { path: string; message: string }[] {
  const ctx = err.validationContext ?? 'body';
  return (err.validation ?? []).map((v) => {
    const issue = v as unknown as ZodIssueLike & { params?: { issue?: ZodIssueLike } };
    const inner = issue.params?.issue ?? issue;
    const p = inner.path?.length ? inner.path.map(String).join('.') : (issue.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    return { path: p ? `${ctx}.${p}` : ctx, message: inner.message };
  });
}

/**
 * One of PostgreSQL's bounds on waiting ended the request (db/client.ts): no pool connection in time,
 * a statement cancelled by statement_timeout, a session ended by idle_in_transaction_session_timeout.
 * The request may succeed when retried. Drizzle wraps a failed query's error in its own (`cause`).
 */
function databaseGaveUp(err: unknown): boolean {
  const code = pgErrorCode(err);
  if (code === '57014' || code === '25P03') return true;
  for (let e = err as { message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (e.message === 'timeout exceeded when trying to connect') return true;
  }
  return false;
}

/** Maps anything thrown in a request to an AppError; unknown errors become a generic 500. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as FastifyError & { statusCode?: number };
  if (hasZodFastifySchemaValidationErrors(e) || (e?.validation && e.statusCode === 400)) {
    const details = validationDetails(e);
    const first = details[0];
    return new AppError('VALIDATION_ERROR', first ? `${first.path}: ${first.message}` : 'Validation failed', { details });
  }
  switch (e?.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('INVALID_JSON', 'The request body is not valid JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('PAYLOAD_TOO_LARGE', 'The request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Type');
    case 'FST_REQ_FILE_TOO_LARGE':
      return new AppError('PDF_TOO_LARGE', 'The file is too large');
  }
  if (databaseGaveUp(err)) return new AppError('SERVICE_UNAVAILABLE', 'The database is busy; retry shortly', {}, { 'Retry-After': '1' });
  if (e?.statusCode === 413) return new AppError('PAYLOAD_TOO_LARGE', 'The request body is too large');
  if (e?.statusCode === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Type');
  if (e?.statusCode === 400 && typeof e.code === 'string' && e.code.startsWith('FST_')) {
    return new AppError('VALIDATION_ERROR', 'The request is malformed', { details: [] });
  }
  return new AppError('INTERNAL_ERROR', 'Internal error');
}
