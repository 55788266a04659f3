import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { requestContext } from '../../http/auth.js';
import type { CommitMutation } from '../../http/idempotency.js';
import type { MultipartBody } from '../../http/multipart.js';
import { CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, SECURITY, errorResponses } from '../../http/route-docs.js';
import { AppError } from '../../errors.js';
import { ZAccount } from './account.schemas.js';
import { LOGO_MAX_BYTES, LOGO_MAX_SIDE, logoContentType, type LogoService, type LogoUpload } from './logo.js';

const ZLogoUpload = z.object({
  file: z.string().meta({ format: 'binary', contentMediaType: 'image/png, image/jpeg' }).describe(`The logo: a PNG or JPEG (part Content-Type image/png or image/jpeg), at most ${LOGO_MAX_BYTES / 1024} KB and ${LOGO_MAX_SIDE}×${LOGO_MAX_SIDE} pixels.`),
});
const ZLogoParam = z.object({ file: z.string().max(80) });

/** Refused unread above this: the logo and the multipart framing around it. */
const LOGO_BODY_LIMIT = LOGO_MAX_BYTES + 16 * 1024;
/** A logo's address names its content (sha256): it never changes, so it may be cached for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The `file` part of a multipart body, as the logo service takes it. */
export function logoPart(body: unknown): LogoUpload | undefined {
  const upload = body as MultipartBody | undefined;
  if (!upload || !Array.isArray(upload.files)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send multipart/form-data with the logo as its file part');
  return upload.files.find((f) => f.field === 'file');
}

/** PUT and DELETE /v1/account/logo, and the public /brand/<sha256>.<png|jpg> that serves logos. */
export function logoRoutes(deps: { db: Db; logo: LogoService; commitMutation: CommitMutation }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();

    r.put('/v1/account/logo', {
      config: { auth: 'customer', idempotency: 'optional', sessionCookie: true },
      // The spooled upload is bounded by the Content-Length check below; this bounds the rest.
      bodyLimit: LOGO_BODY_LIMIT,
      preParsing: async (request) => {
        if (Number(request.headers['content-length']) > LOGO_BODY_LIMIT) throw new AppError('PAYLOAD_TOO_LARGE', `The logo is larger than ${LOGO_MAX_BYTES} bytes`, { maxBytes: LOGO_MAX_BYTES });
      },
      schema: {
        operationId: 'setAccountLogo',
        tags: ['Account'],
        summary: 'Set the logo shown at the top of the signing page and in invitation emails',
        description: `multipart/form-data with the image as \`file\` (\`curl -F file=@logo.png\`): PNG or JPEG, at most ${LOGO_MAX_BYTES / 1024} KB and ${LOGO_MAX_SIDE}×${LOGO_MAX_SIDE} pixels, checked by its header before anything decodes it. It is served at logoUrl, an address with its sha256 in it; envelopes created from now on show it, those created before keep the logo they were sent with. Any credential of the account, a test key too; the dashboard session sends X-CSRF-Token. Answers the account as GET /v1/account does.`,
        consumes: ['multipart/form-data'],
        security: [...SECURITY.read, { sessionCookie: [] }],
        body: ZLogoUpload,
        response: {
          200: ZAccount,
          ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['LOGO_INVALID', 'MISSING_FILE', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'CSRF_TOKEN_INVALID', 'X402_NOT_APPLICABLE']),
        },
      },
      // The multipart body is checked by the logo service; the schema above documents it.
      validatorCompiler: () => (data: unknown) => ({ value: data }),
      handler: async (request, reply) => {
        const ctx = requestContext(request);
        const stored = await deps.logo.store(ctx, logoPart(request.body));
        return deps.commitMutation(request, reply, async (tx) => ({ status: 200, body: await stored.commit(tx) }));
      },
    });

    r.delete('/v1/account/logo', {
      config: { auth: 'customer', idempotency: 'optional', sessionCookie: true },
      schema: {
        operationId: 'removeAccountLogo',
        tags: ['Account'],
        summary: 'Remove the logo: the signing page and invitations show none',
        description: 'Envelopes created before keep the logo they were sent with. Removing when there is none is no error. Answers the account as GET /v1/account does.',
        security: [...SECURITY.read, { sessionCookie: [] }],
        response: { 200: ZAccount, ...errorResponses(CUSTOMER_ERRORS, IDEMPOTENCY_ERRORS, ['CSRF_TOKEN_INVALID', 'X402_NOT_APPLICABLE']) },
      },
      handler: async (request, reply) =>
        deps.commitMutation(request, reply, async (tx) => ({ status: 200, body: await deps.logo.remove(tx, requestContext(request)) })),
    });

    // Public and cookieless: an <img> on the signing page and in an email client loads it.
    r.get('/brand/:file', { schema: { hide: true, params: ZLogoParam } }, async (request, reply) => {
      const bytes = await deps.logo.read(request.params.file);
      if (!bytes) throw new AppError('NOT_FOUND', 'No such logo');
      return reply
        .header('content-type', logoContentType(request.params.file))
        .header('cache-control', IMMUTABLE)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'")
        .header('cross-origin-resource-policy', 'cross-origin')
        .send(Buffer.from(bytes));
    });
  };
}
