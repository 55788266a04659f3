/**
 * The floor of an authenticated read: the work GET /v1/account cannot avoid. SHA-256 of the bearer
 * token, one primary-key SELECT (pg Pool of Signet's size, or PGlite), a JSON answer. No framework
 * plugins, no logging, no cache.
 *
 *   FLOOR_TOKEN  the bearer token whose hash the one row carries
 */
import { createHash, randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { exitOnSigterm, openFloorStore } from './store.js';

const token = process.env.FLOOR_TOKEN;
if (!token) throw new Error('FLOOR_TOKEN is required');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

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
const base = await app.listen({ port: 0, host: '127.0.0.1' });
exitOnSigterm(async () => {
  await app.close();
  await store.close();
});
console.log(`read floor listening on ${base}`);
