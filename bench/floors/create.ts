/**
 * The floor of a create: the work POST /v1/envelopes cannot avoid. Multipart parse (@fastify/busboy,
 * streamed), the PDF parsed with @libpdf/core, the file written durably (temporary file, fsync, rename,
 * fsync of the directory), one one-row INSERT in a transaction (pg Pool of Signet's size, or PGlite),
 * a JSON answer. No auth, no idempotency, no charge, no logging.
 *
 * GET /floor/count answers {rows, files}: the bench checks every 2xx left a row and a file.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { Busboy, type BusboyHeaders } from '@fastify/busboy';
import { PDF } from '@libpdf/core';
import Fastify from 'fastify';
import { exitOnSigterm, openFloorStore } from './store.js';

const blobs = path.join(process.env.FLOOR_DATA_DIR!, 'blobs');
mkdirSync(blobs, { recursive: true });

const store = await openFloorStore();
await store.query(`CREATE TABLE floor_envelopes (
  id uuid PRIMARY KEY, title text NOT NULL, file_key text NOT NULL, pages integer NOT NULL,
  payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);

type Upload = { file?: Buffer; payload?: string };

function parse(headers: BusboyHeaders, body: Readable): Promise<Upload> {
  return new Promise((resolve, reject) => {
    const out: Upload = {};
    const busboy = new Busboy({ headers, limits: { files: 10, fields: 20, fieldSize: 1024 * 1024 } });
    busboy.on('file', (field, stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (field === 'pdf' || field === 'file') out.file = Buffer.concat(chunks);
      });
    });
    busboy.on('field', (name, value) => {
      if (name === 'payload') out.payload = value;
    });
    busboy.on('error', reject);
    busboy.on('finish', () => resolve(out));
    body.pipe(busboy);
  });
}

async function writeDurably(file: string, bytes: Uint8Array): Promise<void> {
  const temp = `${file}.tmp`;
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, file);
  const dir = await open(path.dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

const app = Fastify({ bodyLimit: 30 * 1024 * 1024 });
app.addContentTypeParser('multipart/form-data', (request, payload, done) => {
  parse(request.headers as BusboyHeaders, payload).then((upload) => done(null, upload), (err: Error) => done(err, undefined));
});
app.post('/floor/create', async (request, reply) => {
  const { file, payload } = (request.body ?? {}) as Upload;
  if (!file || !payload) return reply.code(400).send({ error: 'pdf and payload parts are required', code: 'VALIDATION_ERROR' });
  let input: { title?: string };
  let pages: number;
  try {
    input = JSON.parse(payload) as { title?: string };
    pages = (await PDF.load(file)).getPageCount();
  } catch {
    return reply.code(400).send({ error: 'not a PDF or not JSON', code: 'INVALID_PDF' });
  }
  const id = randomUUID();
  const key = `${id}.pdf`;
  await writeDurably(path.join(blobs, key), file);
  await store.transaction([{ text: 'INSERT INTO floor_envelopes (id, title, file_key, pages, payload) VALUES ($1, $2, $3, $4, $5)', params: [id, input.title ?? 'Untitled', key, pages, payload] }]);
  return reply.code(201).send({ envelopeId: id, status: 'PENDING', title: input.title ?? 'Untitled', pages });
});
app.get('/floor/count', async () => {
  const [row] = await store.query<{ n: string }>('SELECT count(*) AS n FROM floor_envelopes');
  return { rows: Number(row.n), files: readdirSync(blobs).filter((f) => f.endsWith('.pdf')).length };
});
const base = await app.listen({ port: 0, host: '127.0.0.1' });
exitOnSigterm(async () => {
  await app.close();
  await store.close();
});
console.log(`create floor listening on ${base}`);
