/**
 * The floor of an authenticated read: the work GET /v1/account cannot avoid. SHA-256 of the bearer
 * token, one primary-key SELECT (pg Pool of Signet's size, or PGlite), a JSON answer. No framework
 * plugins, no logging, no cache.
 *
 * Two more floors share this process and its store:
 * - POST /floor/link: the work minting a link (embed, prepare) cannot avoid: the read's SHA-256 and
 *   SELECT, a random token, its SHA-256 stored by a one-row INSERT in a transaction, the URL as JSON;
 * - POST /floor/verify (raw application/pdf): the work verifying a sealed file cannot avoid: SHA-256 of
 *   the file, SHA-256 of what a signature covers (the file less 16 KB), one RSA-2048 signature
 *   verified, one SELECT by the file's hash (registered first through POST /floor/sealed), JSON.
 *
 *   FLOOR_TOKEN  the bearer token whose hash the one row carries
 */
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign, verify } from 'node:crypto';
import Fastify from 'fastify';
import { exitOnSigterm, openFloorStore } from './store.js';

const token = process.env.FLOOR_TOKEN;
if (!token) throw new Error('FLOOR_TOKEN is required');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const sha256Bytes = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
/** What a seal's signature covers: the file less its /Contents hole (about 16 KB here). */
const signedPart = (bytes: Buffer) => bytes.subarray(0, Math.max(0, bytes.length - 16_384));

const store = await openFloorStore();
await store.query(`CREATE TABLE floor_keys (
  key_hash text PRIMARY KEY, customer_id uuid NOT NULL, name text NOT NULL, email text NOT NULL,
  balance_micros bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`);
await store.query('INSERT INTO floor_keys (key_hash, customer_id, name, email, balance_micros) VALUES ($1, $2, $3, $4, $5)', [
  sha256(token),
  randomUUID(),
  'Bench Customer',
  'bench@example.com',
  1_000_000_000,
]);

await store.query('CREATE TABLE floor_links (token_hash text PRIMARY KEY, customer_id uuid NOT NULL, expires_at timestamptz NOT NULL)');
await store.query('CREATE TABLE floor_sealed (sha256 text PRIMARY KEY, title text NOT NULL, completed_at timestamptz NOT NULL DEFAULT now())');
const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });

type Row = { customer_id: string; name: string; email: string; balance_micros: string; created_at: Date };

const app = Fastify();
app.get('/floor/read', async (request, reply) => {
  const auth = request.headers.authorization ?? '';
  const rows = auth.startsWith('Bearer ')
    ? await store.query<Row>('SELECT customer_id, name, email, balance_micros, created_at FROM floor_keys WHERE key_hash = $1', [sha256(auth.slice(7))])
    : [];
  const row = rows[0];
  if (!row) return reply.code(401).send({ error: 'Invalid API key', code: 'UNAUTHORIZED' });
  return { customerId: row.customer_id, name: row.name, email: row.email, creditsCents: Math.floor(Number(row.balance_micros) / 10_000), createdAt: new Date(row.created_at).toISOString() };
});
const customerOf = async (auth: string | undefined) =>
  auth?.startsWith('Bearer ') ? (await store.query<{ customer_id: string }>('SELECT customer_id FROM floor_keys WHERE key_hash = $1', [sha256(auth.slice(7))]))[0] : undefined;
app.post('/floor/link', async (request, reply) => {
  const row = await customerOf(request.headers.authorization);
  if (!row) return reply.code(401).send({ error: 'Invalid API key', code: 'UNAUTHORIZED' });
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(Date.now() + 600_000);
  await store.transaction([{ text: 'INSERT INTO floor_links (token_hash, customer_id, expires_at) VALUES ($1, $2, $3)', params: [sha256(token), row.customer_id, expiresAt] }]);
  return reply.code(201).send({ url: `http://127.0.0.1/sign/embed/${token}`, expiresAt: expiresAt.toISOString() });
});
app.addContentTypeParser('application/pdf', { parseAs: 'buffer', bodyLimit: 50 * 1024 * 1024 }, (_request, body, done) => done(null, body));
const signatureOf = new Map<string, Buffer>();
app.post('/floor/sealed', async (request) => {
  const bytes = request.body as Buffer;
  const hash = sha256Bytes(bytes);
  signatureOf.set(hash, sign('sha256', signedPart(bytes), keys.privateKey));
  await store.query('INSERT INTO floor_sealed (sha256, title) VALUES ($1, $2)', [hash, 'Bench']);
  return { sha256: hash };
});
app.post('/floor/verify', async (request, reply) => {
  const bytes = request.body as Buffer;
  const hash = sha256Bytes(bytes);
  const rows = await store.query<{ title: string; completed_at: Date }>('SELECT title, completed_at FROM floor_sealed WHERE sha256 = $1', [hash]);
  const signature = signatureOf.get(hash);
  const intact = signature !== undefined && verify('sha256', signedPart(bytes), keys.publicKey, signature);
  if (!rows[0] || !intact) return reply.code(404).send({ status: 'NOT_SEALED' });
  return { status: 'SEALED', sha256: hash, intact, envelope: { title: rows[0].title, completedAt: new Date(rows[0].completed_at).toISOString() } };
});
const base = await app.listen({ port: 0, host: '127.0.0.1' });
exitOnSigterm(async () => {
  await app.close();
  await store.close();
});
console.log(`read floor listening on ${base}`);
