import { Busboy, type BusboyHeaders } from '@fastify/busboy';
import type { FastifyInstance, FastifyRequest } from 'fastify';
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
