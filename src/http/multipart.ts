import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, readdir, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { Busboy, type BusboyHeaders } from '@fastify/busboy';
import type { FastifyInstance, FastifyRequest, FastifySchema } from 'fastify';
import FindMyWay from 'find-my-way';
import type { z } from 'zod';
import { sha256Hex } from '../lib/crypto.js';
import { collectGarbage } from '../lib/gc.js';
import { AppError } from '../errors.js';
import { refuseNul } from './text-guard.js';

export type UploadedFile = {
  field: string;
  filename: string;
  mimetype: string;
  /** The file the part was streamed to; it is removed when the request ends, if it was not moved into storage before. */
  path: string;
  size: number;
};
export type MultipartBody = { files: UploadedFile[]; fields: Record<string, string>; tooManyFiles: boolean };

/** More file parts than this are reported (tooManyFiles) rather than read. */
export const MAX_FILE_PARTS = 10;
/** A field, or the `payload` sent as a file part (`curl -F payload=@payload.json`), is held in memory up to this. */
const MAX_FIELD_BYTES = 1024 * 1024;
/** An upload file not written for this long is a leftover of a crash: no request lives that long. */
const LEFTOVER_MS = 60 * 60 * 1000;
/**
 * The body's chunks are dead once written, but V8 would let a whole upload's worth of them pile up
 * before freeing any (see collectGarbage): a young-generation collection every this many bytes
 * received frees them as the upload goes. A small upload never reaches one.
 */
const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

export type MultipartOptions = {
  /** The whole body: the file parts, the payload and the framing. */
  bodyLimit: number;
  /** The file parts together (MAX_PDF_BYTES). */
  maxFileBytes: number;
  /** File parts are streamed to files of DATA_DIR/tmp/uploads, `<uuid>-<n>` (one uuid per request). */
  dataDir: string;
};

const UPLOAD_FILES = Symbol('uploadFiles');
type UploadRequest = FastifyRequest & { [UPLOAD_FILES]?: UploadFiles };

const malformed = () => new AppError('VALIDATION_ERROR', 'The multipart body is malformed', { details: [{ path: 'body', message: 'malformed multipart body' }] });

/** As loosely as Fastify matches the parser below (case, leading space). */
const MULTIPART = /^\s*multipart\/form-data/i;

/** A route takes uploads when it says it consumes multipart/form-data: the same declaration documents it in the OpenAPI. */
const takesUploads = (schema: FastifySchema | undefined) => (schema as { consumes?: string[] } | undefined)?.consumes?.includes('multipart/form-data') === true;

/** Which routes take uploads, by method and path: asked before routing (an `Expect: 100-continue`). */
export type UploadRoutes = { accepts(method: string, path: string): boolean };

/**
 * multipart/form-data, streamed: each file part goes to a file of its own in DATA_DIR/tmp/uploads while
 * it is hashed and counted, so a 25 MB upload is never held in memory. The limits are enforced as the
 * bytes arrive (413 PDF_TOO_LARGE the moment the body or the file parts pass theirs, and the files
 * written so far are removed), and the parts are hashed for the idempotency fingerprint before the
 * handler runs. The request's files are removed when the response is over or the connection is lost,
 * whatever happened; leftovers of a crash are swept at start and hourly. No directory is made per
 * request (a mkdir and rm -r's walk saved on every upload): the upload directory is made once, at
 * start (and again by the hourly sweep, should it have been removed).
 */
export function registerMultipart(app: FastifyInstance, opts: MultipartOptions): UploadRoutes {
  const root = path.join(opts.dataDir, 'tmp', 'uploads');
  const uploadRoutes = FindMyWay();
  app.addHook('onRoute', (route) => {
    if (takesUploads(route.schema)) for (const method of [route.method].flat()) uploadRoutes.on(method as FindMyWay.HTTPMethod, route.url, () => {});
  });

  // After authentication and the rate limit, before a byte of the body is read: a route that takes no
  // file refuses one (415), or every public POST would spool MAX_PDF_BYTES to disk and hash it first.
  app.addHook('preParsing', (request: UploadRequest, reply, payload, done) => {
    if (!MULTIPART.test(request.headers['content-type'] ?? '') || request.method === 'GET' || request.method === 'HEAD') return done(null, payload);
    // No route: the body is left unread (the parser below reads none) and the 404 or 405 is answered.
    if (request.is404) return done(null, payload);
    if (!takesUploads(request.routeOptions.schema)) return done(new AppError('UNSUPPORTED_MEDIA_TYPE', 'This route takes no file upload (multipart/form-data)'), payload);
    const files = (request[UPLOAD_FILES] = new UploadFiles(root));
    reply.raw.once('close', () => {
      files.remove().catch((err: unknown) => request.log.warn({ err }, 'could not remove an upload file'));
    });
    done(null, payload);
  });

  let sweeper: NodeJS.Timeout | undefined;
  const sweep = () => sweepLeftovers(root).catch((err: unknown) => app.log.warn({ err }, 'could not sweep the upload directory'));
  app.addHook('onReady', async () => {
    await sweep();
    sweeper = setInterval(sweep, LEFTOVER_MS).unref();
  });
  app.addHook('onClose', async () => clearInterval(sweeper));

  app.addContentTypeParser('multipart/form-data', async (request: UploadRequest, payload: Readable) => {
    const files = request[UPLOAD_FILES];
    // Only a request no route matched gets here without them (see preParsing): nothing to read.
    if (!files) return undefined;
    const tooLarge = () => new AppError('PDF_TOO_LARGE', `The upload exceeds the ${opts.maxFileBytes}-byte limit`, { maxBytes: opts.maxFileBytes });
    if (Number(request.headers['content-length']) > opts.bodyLimit) throw tooLarge();
    try {
      const { body, parts } = await receive(request, payload, files, { ...opts, tooLarge });
      request.bodyHash = sha256Hex(parts);
      return body;
    } catch (err) {
      // Stopped at a limit, malformed or cut off: nothing of it stays on disk. (A failure to remove
      // is logged when the response closes; the refusal is what the client gets.)
      await files.remove().catch(() => undefined);
      throw err;
    }
  });

  return { accepts: (method, path) => uploadRoutes.find(method as FindMyWay.HTTPMethod, path) !== null };
}

/**
 * One request's upload files, `<root>/<uuid>-<n>`, removed when the response is closed (finished, or
 * the connection lost): none is created once the removal has begun, and the removal waits for the
 * files being written to be closed, so none appears after it. A file the handler moved away (the
 * stored original: BlobStorage.putFile with `move`) is not there any more, which is no error.
 */
class UploadFiles {
  private readonly prefix: string;
  private readonly paths: string[] = [];
  private readonly writers = new Set<WriteStream>();
  private removed?: Promise<void>;

  constructor(root: string) {
    this.prefix = path.join(root, randomUUID());
  }

  writer(): WriteStream {
    if (this.removed) throw new Error('the request has ended');
    const file = `${this.prefix}-${this.paths.length + 1}`;
    this.paths.push(file);
    const ws = createWriteStream(file, { flags: 'wx', mode: 0o600 });
    this.writers.add(ws);
    ws.once('close', () => this.writers.delete(ws));
    return ws;
  }

  remove(): Promise<void> {
    this.removed ??= (async () => {
      await Promise.all([...this.writers].map((ws) => new Promise<void>((resolve) => (ws.closed ? resolve() : (ws.once('close', () => resolve()), ws.destroy())))));
      const failed = (await Promise.allSettled(this.paths.map((file) => unlink(file)))).find(
        (r): r is PromiseRejectedResult => r.status === 'rejected' && (r.reason as NodeJS.ErrnoException).code !== 'ENOENT',
      );
      if (failed) throw failed.reason;
    })();
    return this.removed;
  }
}

/**
 * Makes the upload directory (again, should it have been removed) and removes what nobody has written
 * to for LEFTOVER_MS: the files of requests a crash interrupted, and the per-request directories
 * earlier versions made.
 */
async function sweepLeftovers(root: string): Promise<void> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  for (const name of await readdir(root)) {
    const full = path.join(root, name);
    const info = await stat(full).catch(() => undefined);
    if (info && Date.now() - info.mtimeMs > LEFTOVER_MS) await rm(full, { recursive: true, force: true });
  }
}

function receive(
  request: FastifyRequest,
  payload: Readable,
  files: UploadFiles,
  opts: MultipartOptions & { tooLarge: () => AppError },
): Promise<{ body: MultipartBody; parts: string }> {
  return new Promise((resolve, reject) => {
    const body: MultipartBody = { files: [], fields: {}, tooManyFiles: false };
    const hashes: [string, string][] = [];
    const writes: Promise<unknown>[] = [];
    let payloadFile: string | undefined;
    let received = 0;
    let fileBytes = 0;
    let failed = false;

    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      payload.off('data', onData).off('end', onEnd).off('error', onAbort).off('close', onClose);
      // Whatever else arrives is read and dropped (the body guard bounds it once the answer is sent),
      // so the client gets to read the answer instead of a reset connection.
      payload.resume();
      reject(err);
    };

    let busboy: InstanceType<typeof Busboy>;
    try {
      busboy = new Busboy({
        headers: request.headers as BusboyHeaders,
        limits: { files: MAX_FILE_PARTS, fields: 20, fieldSize: MAX_FIELD_BYTES, parts: MAX_FILE_PARTS + 20 },
      });
    } catch {
      return reject(malformed());
    }

    busboy.on('file', (field, stream, filename, _encoding, mimetype) => {
      if (failed) return stream.resume();
      const index = hashes.push([field, '']) - 1;
      const hash = createHash('sha256');
      stream.on('data', (chunk: Buffer) => hash.update(chunk));
      stream.on('end', () => (hashes[index][1] = hash.digest('hex')));
      if (field === 'payload') {
        const chunks: Buffer[] = [];
        let size = 0;
        stream.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_FIELD_BYTES) fail(new AppError('VALIDATION_ERROR', `The payload part exceeds ${MAX_FIELD_BYTES} bytes`, { details: [{ path: 'payload', message: 'too large' }] }));
          else chunks.push(chunk);
        });
        stream.on('end', () => (payloadFile = Buffer.concat(chunks).toString('utf8')));
        return;
      }
      let ws: WriteStream;
      try {
        ws = files.writer();
      } catch (err) {
        stream.resume();
        return fail(err);
      }
      const file: UploadedFile = { field, filename, mimetype, path: String(ws.path), size: 0 };
      body.files.push(file);
      stream.on('data', (chunk: Buffer) => {
        file.size += chunk.length;
        fileBytes += chunk.length;
        if (fileBytes > opts.maxFileBytes) fail(opts.tooLarge());
      });
      stream.pipe(ws);
      // A disk error is ours (500), not the client's.
      writes.push(finished(ws).catch((err: unknown) => fail(err)));
    });
    busboy.on('field', (name, value) => {
      body.fields[name] = value;
    });
    busboy.on('filesLimit', () => {
      body.tooManyFiles = true;
    });
    busboy.on('error', () => fail(malformed()));
    busboy.on('finish', () => {
      void Promise.all(writes).then(() => {
        if (failed) return;
        // What the idempotency fingerprint covers: the parts, not the framing (clients pick a new
        // boundary per request, and a retry with the same parts must still be recognised as the same request).
        const parts = JSON.stringify([hashes, Object.entries(body.fields).sort(([a], [b]) => a.localeCompare(b))]);
        // A payload field wins over a payload file part, as it always has.
        if (payloadFile !== undefined) body.fields.payload ??= payloadFile;
        resolve({ body, parts });
      });
    });

    const onData = (chunk: Buffer) => {
      const before = received;
      received += chunk.length;
      if (received > opts.bodyLimit) return fail(opts.tooLarge());
      if (Math.floor(received / COLLECT_EVERY_BYTES) > Math.floor(before / COLLECT_EVERY_BYTES)) collectGarbage('minor');
      // A limit may be hit inside write(): the body must then keep flowing (see fail).
      if (!busboy.write(chunk) && !failed) {
        payload.pause();
        busboy.once('drain', () => failed || payload.resume());
      }
    };
    const onEnd = () => busboy.end();
    // The client went away mid-body: nobody reads the answer, but the files must go.
    const onAbort = () => fail(malformed());
    const onClose = () => {
      if (!payload.readableEnded) onAbort();
    };
    if (payload.destroyed) return onAbort();
    payload.on('data', onData).on('end', onEnd).on('error', onAbort).on('close', onClose);
  });
}

/**
 * Reads a document upload: the file parts (any of `fileParts`, in order) and the JSON `payload` part,
 * checked against `schema`. Cheapest refusal first: shape, file count and size, then the payload.
 * The parts are the files they were streamed to (removed when the request ends).
 */
export function readUpload<T>(
  body: unknown,
  opts: { fileParts: readonly string[]; missingFile: 'MISSING_PDF' | 'MISSING_FILE'; maxBytes: number; schema: z.ZodType<T> },
): { payload: T; parts: string[] } {
  const upload = body as MultipartBody | undefined;
  const part = opts.fileParts[0];
  if (!upload || !Array.isArray(upload.files)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Send multipart/form-data with a ${part} part and a payload part`);
  if (upload.tooManyFiles) throw new AppError('OUT_OF_SCOPE_V1', `At most ${MAX_FILE_PARTS} documents per envelope in v1`);
  const files = upload.files.filter((f) => opts.fileParts.includes(f.field));
  if (files.length === 0 || files.every((f) => f.size === 0)) throw new AppError(opts.missingFile, `The multipart body has no ${part} part`);
  if (files.reduce((n, f) => n + f.size, 0) > opts.maxBytes) throw new AppError('PDF_TOO_LARGE', `The PDF exceeds the ${opts.maxBytes}-byte limit`, { maxBytes: opts.maxBytes });
  const raw = upload.fields.payload;
  if (raw === undefined) throw new AppError('MISSING_PAYLOAD', 'The multipart body has no payload part');
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new AppError('INVALID_JSON', 'The payload part is not valid JSON');
  }
  refuseNul(json, 'payload');
  const parsed = opts.schema.safeParse(json);
  if (!parsed.success) {
    const details = parsed.error.issues.map((i) => ({ path: ['payload', ...i.path.map(String)].join('.'), message: i.message }));
    throw new AppError('VALIDATION_ERROR', `${details[0].path}: ${details[0].message}`, { details });
  }
  return { payload: parsed.data, parts: files.map((f) => f.path) };
}
