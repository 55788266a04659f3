import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError, type ErrorCode } from '../../errors.js';
import type { MultipartBody } from '../../http/multipart.js';
import { SECURITY, errorResponses } from '../../http/route-docs.js';
import { ZDocumentVerification } from './documents.schemas.js';
import type { DocumentsService } from './documents.service.js';

export type DocumentRouteDeps = {
  db: Db;
  documents: DocumentsService;
  maxPdfBytes: number;
  /** Calls per window: anonymous callers per IP, authenticated ones per customer. */
  rateLimit: { anonymous: number; customer: number; windowMs: number };
};

const ERRORS: ErrorCode[] = ['TOKEN_INVALID', 'UNAUTHORIZED', 'RATE_LIMITED', 'INTERNAL_ERROR', 'MISSING_FILE', 'INVALID_PDF', 'PDF_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'VALIDATION_ERROR'];

const HOW = `Send the PDF either as multipart/form-data with one \`file\` part (what a browser form or \`curl -F file=@signed.pdf\`
sends), or as the raw request body with \`Content-Type: application/pdf\` (\`curl --data-binary @signed.pdf\`); at most
MAX_PDF_BYTES (413 PDF_TOO_LARGE). The answer says whether this server sealed the file and whether it changed since:
SEALED (byte for byte the sealed file), MODIFIED (sealed here, but content was added or altered after sealing) or
NOT_SEALED. The envelope (title, completion time, signers and when they signed) is named only when the file, or the
signed revision inside it, is exactly the sealed file. For a file carrying this server's signature, \`evidence\` reports
the signing time and whether it comes from an RFC 3161 timestamp authority (the token verified and stamping this
signature), the PAdES level the file shows (B-B, B-T, B-LT, B-LTA), the revocation data its DSS holds, and its document
timestamps. Nothing of the upload is stored.

Free. Authentication is optional: without credentials the call is anonymous and limited per IP
(VERIFY_DOCUMENT_RATE_LIMIT per RATE_LIMIT_WINDOW_MS, default 30 a minute); with an API key or a wallet JWT it counts
against the customer's own limit, and a credential that is sent must be valid (401 otherwise). x402 payment headers are
ignored: there is nothing to pay.`;

const ZUpload = z.object({ file: z.string().meta({ format: 'binary' }).describe('The PDF (binary); a `pdf` part is accepted too') });

export function documentsRoutes(deps: DocumentRouteDeps) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    // The raw-body form, in this plugin's scope only, bounded as an upload is.
    app.addContentTypeParser('application/pdf', { parseAs: 'buffer', bodyLimit: deps.maxPdfBytes }, (_request, body, done) => done(null, body));

    r.post('/v1/documents/verify', {
      config: {
        auth: 'optional',
        // A pure read: an Idempotency-Key has nothing to protect, and nothing is stored under one.
        idempotency: 'handler',
        rateLimit: {
          max: (request) => (request.actor ? deps.rateLimit.customer : deps.rateLimit.anonymous),
          timeWindow: deps.rateLimit.windowMs,
        },
      },
      schema: {
        operationId: 'verifyDocument',
        tags: ['Documents'],
        summary: 'Check whether this server sealed a PDF and whether it changed since (free)',
        description: HOW,
        consumes: ['multipart/form-data', 'application/pdf'],
        // `{}`: no credential at all is accepted too.
        security: [{}, ...SECURITY.read],
        body: ZUpload,
        response: { 200: ZDocumentVerification, ...errorResponses(ERRORS) },
      },
      // The body is a multipart upload or raw bytes, read below; the schema above documents it.
      validatorCompiler: () => (data: unknown) => ({ value: data }),
      handler: async (request, reply) => {
        const bytes = await uploadedPdf(request.body, deps.maxPdfBytes);
        reply.header('cache-control', 'no-store');
        return deps.documents.verify(deps.db, bytes);
      },
    });
  };
}

/**
 * The one PDF of the request: the raw body, or the multipart `file` (or `pdf`) part, read from the file
 * it was streamed to (bounded by MAX_PDF_BYTES as it arrived).
 */
async function uploadedPdf(body: unknown, maxBytes: number): Promise<Uint8Array> {
  let bytes: Uint8Array;
  if (Buffer.isBuffer(body)) bytes = body;
  else if (body && Array.isArray((body as MultipartBody).files)) {
    const parts = (body as MultipartBody).files.filter((f) => f.field === 'file' || f.field === 'pdf');
    if (parts.length > 1 || (body as MultipartBody).tooManyFiles) {
      throw new AppError('VALIDATION_ERROR', 'Send one PDF per call', { details: [{ path: 'file', message: 'one file part only' }] });
    }
    bytes = parts[0] && parts[0].size > 0 ? await readFile(parts[0].path) : new Uint8Array();
  } else {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send the PDF as multipart/form-data (a file part) or as the body with Content-Type: application/pdf');
  }
  if (bytes.length === 0) throw new AppError('MISSING_FILE', 'The request carries no PDF: send a file part, or the PDF as the body');
  if (bytes.length > maxBytes) throw new AppError('PDF_TOO_LARGE', `The PDF exceeds the ${maxBytes}-byte limit`, { maxBytes });
  return bytes;
}
