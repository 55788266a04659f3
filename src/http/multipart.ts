import { Busboy, type BusboyHeaders } from '@fastify/busboy';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { sha256Hex } from '../lib/crypto.js';
import { AppError } from '../errors.js';

export type UploadedFile = { field: string; filename: string; mimetype: string; data: Buffer };
export type MultipartBody = { files: UploadedFile[]; fields: Record<string, string>; tooManyFiles: boolean };

/** More file parts than this are reported (tooManyFiles) rather than read. */
export const MAX_FILE_PARTS = 10;

/**
 * multipart/form-data, read whole but bounded: Fastify stops reading at `bodyLimit` (413 PDF_TOO_LARGE)
 * so an oversize upload is never buffered, and a complete body can be hashed for the idempotency
 * fingerprint before the handler runs.
 */
export function registerMultipart(app: FastifyInstance, opts: { bodyLimit: number }): void {
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer', bodyLimit: opts.bodyLimit }, (request, body, done) => {
    parseMultipart(request, body as Buffer).then(
      (parsed) => {
        // The fingerprint covers the parts, not the framing: clients pick a new boundary per request,
        // and a retry with the same parts must still be recognised as the same request.
        request.bodyHash = sha256Hex(
          JSON.stringify([
            parsed.files.map((f) => [f.field, sha256Hex(f.data)]),
            Object.entries(parsed.fields).sort(([a], [b]) => a.localeCompare(b)),
          ]),
        );
        done(null, parsed);
      },
      (err) => done(err instanceof AppError ? err : new AppError('VALIDATION_ERROR', 'The multipart body is malformed', { details: [{ path: 'body', message: 'malformed multipart body' }] }), undefined),
    );
  });
}

function parseMultipart(request: FastifyRequest, buffer: Buffer): Promise<MultipartBody> {
  return new Promise((resolve, reject) => {
    const result: MultipartBody = { files: [], fields: {}, tooManyFiles: false };
    const busboy = new Busboy({
      headers: request.headers as BusboyHeaders,
      limits: { files: MAX_FILE_PARTS, fields: 20, fieldSize: 1024 * 1024, parts: MAX_FILE_PARTS + 20 },
    });
    busboy.on('file', (field, stream, filename, _encoding, mimetype) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => result.files.push({ field, filename, mimetype, data: Buffer.concat(chunks) }));
    });
    busboy.on('field', (name, value) => {
      result.fields[name] = value;
    });
    busboy.on('filesLimit', () => {
      result.tooManyFiles = true;
    });
    busboy.on('error', reject);
    busboy.on('finish', () => resolve(result));
    busboy.end(buffer);
  });
}

/**
 * Reads a document upload: the file parts (any of `fileParts`, in order) and the JSON `payload` part,
 * checked against `schema`. Cheapest refusal first: shape, file count and size, then the payload.
 */
export function readUpload<T>(
  body: unknown,
  opts: { fileParts: readonly string[]; missingFile: 'MISSING_PDF' | 'MISSING_FILE'; maxBytes: number; schema: z.ZodType<T> },
): { payload: T; parts: Uint8Array[] } {
  const upload = body as MultipartBody | undefined;
  const part = opts.fileParts[0];
  if (!upload || !Array.isArray(upload.files)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Send multipart/form-data with a ${part} part and a payload part`);
  if (upload.tooManyFiles) throw new AppError('OUT_OF_SCOPE_V1', `At most ${MAX_FILE_PARTS} documents per envelope in v1`);
  const parts = upload.files.filter((f) => opts.fileParts.includes(f.field)).map((f) => f.data);
  if (parts.length === 0 || parts.every((p) => p.length === 0)) throw new AppError(opts.missingFile, `The multipart body has no ${part} part`);
  if (parts.reduce((n, p) => n + p.length, 0) > opts.maxBytes) throw new AppError('PDF_TOO_LARGE', `The PDF exceeds the ${opts.maxBytes}-byte limit`, { maxBytes: opts.maxBytes });
  // `curl -F payload=@payload.json` sends the payload as a file part; accept it as well.
  const raw = upload.fields.payload ?? upload.files.find((f) => f.field === 'payload')?.data.toString('utf8');
  if (raw === undefined) throw new AppError('MISSING_PAYLOAD', 'The multipart body has no payload part');
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new AppError('INVALID_JSON', 'The payload part is not valid JSON');
  }
  const parsed = opts.schema.safeParse(json);
  if (!parsed.success) {
    const details = parsed.error.issues.map((i) => ({ path: ['payload', ...i.path.map(String)].join('.'), message: i.message }));
    throw new AppError('VALIDATION_ERROR', `${details[0].path}: ${details[0].message}`, { details });
  }
  return { payload: parsed.data, parts };
}
