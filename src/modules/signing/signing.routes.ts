import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '../../errors.js';
import type { MultipartBody } from '../../http/multipart.js';
import { negotiateLocale } from '../../i18n/locales.js';
import type { SigningService } from './signing.service.js';

const ZToken = z.object({ token: z.string().max(100) });
const ZComplete = z.object({
  fields: z.array(z.object({ fieldId: z.number().int(), value: z.string().max(2000).nullable().optional() })).max(500).default([]),
  signature: z
    .object({ kind: z.enum(['typed', 'drawn', 'uploaded']), text: z.string().max(200).optional(), image: z.string().max(2_000_000).optional() })
    .optional(),
});
const ZReject = z.object({ reason: z.string().trim().min(1).max(1000) });
/** An IANA time zone name as the browser reports it (Intl), one this server's Intl knows: the certificate formats times in it. */
const ZTimeZone = z
  .string()
  .max(64)
  .regex(/^[A-Za-z0-9_+\-]+(\/[A-Za-z0-9_+\-]+)*$/, 'an IANA time zone name, e.g. Europe/Paris')
  .refine((tz) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  }, 'an IANA time zone name this server knows, e.g. Europe/Paris');
// No body at all is a consent with no time zone.
const ZConsent = z.object({ timeZone: ZTimeZone.nullable().optional() }).nullish();
const ZConfirmCode = z.object({ code: z.string().trim().min(1).max(32) });
const ZDelegate = z.object({ name: z.string().trim().min(1).max(200), email: z.email().max(320), reason: z.string().trim().max(500).optional() }).strict();
const ZAttachParams = ZToken.extend({ fieldId: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER) });
/** The multipart framing around an attachment: a request larger than the file limit plus this is refused unread. */
const FRAMING_BYTES = 64 * 1024;

const client = (request: FastifyRequest) => ({ ip: request.ip, userAgent: (request.headers['user-agent'] ?? '').slice(0, 500) || null, locale: negotiateLocale(request.headers['accept-language']) ?? null });

/** JSON routes behind the recipient's signing page; the token in the link is the credential. */
export function signingRoutes(deps: { signing: SigningService; attachmentMaxBytes: number }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    // Signing bodies carry a signature image: allow more than the default 1 MiB JSON limit.
    const bodyLimit = 3 * 1024 * 1024;

    r.get('/sign/:token/session', { schema: { hide: true, params: ZToken } }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return deps.signing.session(request.params.token, client(request));
    });

    r.get('/sign/:token/document', { schema: { hide: true, params: ZToken } }, async (request, reply) => {
      const { stream, size } = await deps.signing.document(request.params.token);
      return reply.type('application/pdf').header('cache-control', 'no-store').header('content-length', size).send(stream);
    });

    r.post('/sign/:token/complete', { bodyLimit, schema: { hide: true, params: ZToken, body: ZComplete } }, async (request) =>
      deps.signing.complete(request.params.token, request.body, client(request)),
    );

    // A FILE field's attachment: multipart/form-data with the file as its `file` part (streamed to disk, checked in the sandbox).
    r.post('/sign/:token/attachments/:fieldId', {
      preParsing: async (request) => {
        const limit = deps.attachmentMaxBytes + FRAMING_BYTES;
        if (Number(request.headers['content-length']) > limit) throw new AppError('ATTACHMENT_TOO_LARGE', `The file is larger than ${deps.attachmentMaxBytes} bytes`, { maxBytes: deps.attachmentMaxBytes });
      },
      schema: { hide: true, params: ZAttachParams, consumes: ['multipart/form-data'] },
    }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const body = request.body as MultipartBody | undefined;
      if (!body || !Array.isArray(body.files)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send multipart/form-data with the file as its `file` part');
      const file = body.files.find((f) => f.field === 'file');
      return deps.signing.attach(request.params.token, request.params.fieldId, file, client(request));
    });

    // A gated recipient's emailed code: sent, then confirmed, before the document is shown.
    r.post('/sign/:token/verification/code', { schema: { hide: true, params: ZToken } }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return deps.signing.requestCode(request.params.token);
    });

    r.post('/sign/:token/verification/confirm', { schema: { hide: true, params: ZToken, body: ZConfirmCode } }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return deps.signing.confirmCode(request.params.token, request.body.code, client(request));
    });

    // The recipient agrees to electronic records and signatures: required before complete, not before reject.
    r.post('/sign/:token/consent', { schema: { hide: true, params: ZToken, body: ZConsent } }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return deps.signing.consent(request.params.token, request.body?.timeZone ?? null, client(request));
    });

    // "I am not the right person": hand the document to someone else, where the envelope allows it.
    r.post('/sign/:token/delegate', { schema: { hide: true, params: ZToken, body: ZDelegate } }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return deps.signing.delegate(request.params.token, { name: request.body.name, email: request.body.email, reason: request.body.reason || null }, client(request));
    });

    r.post('/sign/:token/reject', { schema: { hide: true, params: ZToken, body: ZReject } }, async (request) =>
      deps.signing.reject(request.params.token, request.body.reason, client(request)),
    );
  };
}
