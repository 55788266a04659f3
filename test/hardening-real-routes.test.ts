/**
 * Idempotency on the real billable routes (POST /v1/envelopes, POST /v1/envelopes/{id}/send), not the
 * stand-in: a same-key race creates and charges once; a request that overruns its lease is taken over
 * by its retry and rolls back. The takeover needs two connections: it runs on PostgreSQL only (CI runs
 * the suite there); PGlite's single connection serialises the requests, which the race covers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { envelopeBody, postMultipart, samplePdf, sigField, signer } from './fixtures/envelopes.js';

let t: TestApp;
before(async () => {
  t = await createTestApp({ env: { IDEMPOTENCY_LEASE_MS: '300' } });
});
after(() => t?.close());

const createBody = async (title: string) => envelopeBody([await samplePdf()], { title, recipients: [signer(1)], fields: [sigField(signer(1).email)] });

async function countOf(query: ReturnType<typeof sql>): Promise<number> {
  return Number(rowsOf<{ n: number }>(await t.container.db.execute(query))[0].n);
}
const envelopesOf = (c: TestCustomer) => countOf(sql`SELECT count(*)::int AS n FROM envelopes WHERE customer_id = ${c.id}`);
const debitsOf = (c: TestCustomer) => countOf(sql`SELECT count(*)::int AS n FROM ledger_entries WHERE customer_id = ${c.id} AND direction = 'debit'`);

async function draftOf(c: TestCustomer): Promise<string> {
  const res = await postMultipart(t, await createBody('draft'), { apiKey: c.apiKey, url: '/v1/envelopes/draft' });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().envelopeId;
}

const send = (c: TestCustomer, id: string, key: string) =>
  t.app.inject({ method: 'POST', url: `/v1/envelopes/${id}/send`, headers: { ...bearer(c.apiKey), 'idempotency-key': key }, payload: {} });

/** Every answer is the one 2xx (fresh once, replayed otherwise) or 409 while the first still runs. */
function assertOneOutcome(responses: { statusCode: number; body: string; headers: Record<string, unknown> }[], status: number) {
  const ok = responses.filter((r) => r.statusCode === status);
  assert.ok(ok.length >= 1, responses.map((r) => `${r.statusCode} ${r.body}`).join('\n'));
  assert.equal(ok.filter((r) => r.headers['idempotent-replayed'] === undefined).length, 1, 'one fresh answer');
  for (const r of ok) assert.equal(r.body, ok[0].body);
  for (const r of responses.filter((x) => x.statusCode !== status)) {
    assert.equal(r.statusCode, 409, r.body);
    assert.equal(JSON.parse(r.body).code, 'IDEMPOTENCY_KEY_IN_USE');
  }
}

describe('same-key race on the real billable routes', () => {
  test('ten concurrent POST /v1/envelopes with one key: one envelope, one debit', async () => {
    const c = await t.createCustomer(500);
    const body = await createBody('race');
    const responses = await Promise.all(Array.from({ length: 10 }, () => postMultipart(t, body, { apiKey: c.apiKey, key: 'race-create' })));
    assertOneOutcome(responses, 201);
    assert.equal(await envelopesOf(c), 1);
    assert.equal(await debitsOf(c), 1);
  });

  test('ten concurrent POST /v1/envelopes/{id}/send with one key: sent once, one debit', async () => {
    const c = await t.createCustomer(500);
    const id = await draftOf(c);
    const responses = await Promise.all(Array.from({ length: 10 }, () => send(c, id, 'race-send')));
    assertOneOutcome(responses, 200);
    assert.equal(await debitsOf(c), 1);
  });
});

describe('lease takeover on the real billable routes (PostgreSQL)', { skip: !process.env.DATABASE_URL && 'needs two connections: PostgreSQL only' }, () => {
  /**
   * Holds the customer's balance row from another connection, so the request's charge (its last step)
   * waits inside its transaction while its 300 ms lease lapses; then lets go.
   */
  async function withBalanceHeld(c: TestCustomer, work: (release: () => Promise<void>) => Promise<void>) {
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      const schema = rowsOf<{ s: string }>(await t.container.db.execute(sql`SELECT current_schema() AS s`))[0].s;
      await client.query(`SET search_path TO "${schema}"`);
      await client.query('BEGIN');
      await client.query('SELECT 1 FROM customers WHERE id = $1 FOR NO KEY UPDATE', [c.id]);
      await work(async () => void (await client.query('COMMIT')));
    } finally {
      await client.end();
    }
  }

  async function waitLapsed(c: TestCustomer, key: string) {
    const lapsed = sql`SELECT count(*)::int AS n FROM idempotency_keys WHERE customer_id = ${c.id} AND key = ${key} AND state = 'in_progress' AND lease_expires_at < now()`;
    for (let i = 0; i < 100 && (await countOf(lapsed)) === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await countOf(lapsed), 1, 'the first request holds a lapsed reservation');
  }

  for (const route of ['create', 'send'] as const) {
    test(`${route}: the overrunning request rolls back, its retry answers, one debit`, async () => {
      const c = await t.createCustomer(500);
      const id = route === 'send' ? await draftOf(c) : '';
      const body = await createBody('lease');
      const key = `lease-${route}`;
      const go = () => (route === 'create' ? postMultipart(t, body, { apiKey: c.apiKey, key }) : send(c, id, key));
      await withBalanceHeld(c, async (release) => {
        const first = go();
        await waitLapsed(c, key);
        const retry = go();
        await new Promise((r) => setTimeout(r, 200));
        await release();
        const [a, b] = await Promise.all([first, retry]);
        const status = route === 'create' ? 201 : 200;
        // Whichever commits first wins the key; the other's final write finds another lease and rolls back.
        const answers = [a, b].map((r) => r.statusCode).sort();
        assert.deepEqual(answers, [status, 409].sort(), `${a.statusCode} ${a.body}\n${b.statusCode} ${b.body}`);
      });
      assert.equal(await debitsOf(c), 1);
      assert.equal(await envelopesOf(c), 1);
    });
  }
});
