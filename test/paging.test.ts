import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, OPS_TOKEN, type TestApp, type TestCustomer } from './harness.js';

const ops = { authorization: `Bearer ${OPS_TOKEN}` };
const N = 25;

let t: TestApp;
let c: TestCustomer;
before(async () => {
  t = await createTestApp({ creditCents: 0 });
  // A customer without an opening credit, then N operator credits of 1..N cents: the ledger holds
  // exactly N entries and the newest has the largest amount.
  c = await t.createCustomer(0);
  for (let i = 1; i <= N; i++) {
    const res = await t.app.inject({
      method: 'POST',
      url: `/ops/customers/${c.id}/credits`,
      headers: { ...ops, 'content-type': 'application/json', 'idempotency-key': `credit-${i}` },
      payload: { amountCents: i, reason: `credit ${i}` },
    });
    assert.equal(res.statusCode, 200, res.body);
  }
});
after(() => t.close());

type Res = { statusCode: number; body: string; json(): any };

const usage = (query = '') => t.app.inject({ url: `/v1/account/usage${query}`, headers: bearer(c.apiKey) });
const audit = (query = '') => t.app.inject({ url: `/ops/audit${query}`, headers: ops });
const amounts = (res: Res) => res.json().data.map((e: { amountCents: number }) => e.amountCents);
/** Amounts from..to inclusive, counting down (newest first). */
const down = (from: number, to: number) => Array.from({ length: from - to + 1 }, (_, i) => from - i);

function ok(res: Res) {
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

function assertInvalid(res: Res, path: string) {
  assert.equal(res.statusCode, 400, res.body);
  const body = res.json();
  assert.equal(body.code, 'VALIDATION_ERROR');
  assert.equal(typeof body.error, 'string');
  assert.ok(Array.isArray(body.details), res.body);
  assert.deepEqual(body.details.map((d: { path: string }) => d.path), [path]);
}

describe('GET /v1/account/usage paging', () => {
  test('the default page is {data, total, limit: 20, offset: 0}, newest first', async () => {
    const body = ok(await usage());
    assert.deepEqual(Object.keys(body).sort(), ['data', 'limit', 'offset', 'total']);
    assert.equal(body.total, N);
    assert.equal(body.limit, 20);
    assert.equal(body.offset, 0);
    assert.equal(body.data.length, 20);
    assert.deepEqual(body.data.map((e: { amountCents: number }) => e.amountCents), down(25, 6));
    const [newest] = body.data;
    assert.equal(newest.direction, 'credit');
    assert.equal(newest.amountMicros, 250_000);
    assert.equal(newest.amountFormatted, '$0.25');
    assert.equal(newest.description, 'credit 25');
    // Newest first by time as well.
    const times = body.data.map((e: { createdAt: string }) => Date.parse(e.createdAt));
    for (let i = 1; i < times.length; i++) assert.ok(times[i - 1] >= times[i], 'createdAt descends');
    // Every entry is distinct.
    assert.equal(new Set(body.data.map((e: { id: string }) => e.id)).size, 20);
  });

  test('limit and offset select a window', async () => {
    const a = ok(await usage('?limit=5&offset=10'));
    assert.equal(a.total, N);
    assert.equal(a.limit, 5);
    assert.equal(a.offset, 10);
    assert.deepEqual(a.data.map((e: { amountCents: number }) => e.amountCents), down(15, 11));

    assert.deepEqual(amounts(await usage('?limit=1')), [25]);
    assert.deepEqual(amounts(await usage('?offset=20')), down(5, 1));
    assert.deepEqual(amounts(await usage('?limit=100')), down(25, 1));
    assert.deepEqual(amounts(await usage('?offset=24&limit=10')), [1]);

    const past = ok(await usage('?offset=25'));
    assert.deepEqual(past, { data: [], total: N, limit: 20, offset: 25 });
    const farPast = ok(await usage('?offset=1000&limit=3'));
    assert.deepEqual(farPast, { data: [], total: N, limit: 3, offset: 1000 });
  });

  test('walking the pages visits every entry exactly once', async () => {
    const seen: number[] = [];
    for (let offset = 0; offset < N; offset += 7) {
      const body = ok(await usage(`?limit=7&offset=${offset}`));
      assert.equal(body.total, N);
      seen.push(...body.data.map((e: { amountCents: number }) => e.amountCents));
    }
    assert.deepEqual(seen, down(25, 1));
  });

  test('page/perPage answers {data, total, page, perPage}', async () => {
    const p2 = ok(await usage('?page=2&perPage=10'));
    assert.deepEqual(Object.keys(p2).sort(), ['data', 'page', 'perPage', 'total']);
    assert.equal(p2.total, N);
    assert.equal(p2.page, 2);
    assert.equal(p2.perPage, 10);
    assert.deepEqual(p2.data.map((e: { amountCents: number }) => e.amountCents), down(15, 6));

    assert.deepEqual(amounts(await usage('?page=3&perPage=10')), down(5, 1));
    const p4 = ok(await usage('?page=4&perPage=10'));
    assert.deepEqual(p4, { data: [], total: N, page: 4, perPage: 10 });

    // Defaults of the Alt form: page 1, perPage 20.
    const onlyPage = ok(await usage('?page=2'));
    assert.equal(onlyPage.page, 2);
    assert.equal(onlyPage.perPage, 20);
    assert.deepEqual(onlyPage.data.map((e: { amountCents: number }) => e.amountCents), down(5, 1));
    const onlyPerPage = ok(await usage('?perPage=3'));
    assert.equal(onlyPerPage.page, 1);
    assert.equal(onlyPerPage.perPage, 3);
    assert.deepEqual(onlyPerPage.data.map((e: { amountCents: number }) => e.amountCents), [25, 24, 23]);
    assert.deepEqual(amounts(await usage('?perPage=100')), down(25, 1));
  });

  const invalid: [string, string][] = [
    ['limit=0', 'querystring.limit'],
    ['limit=101', 'querystring.limit'],
    ['limit=abc', 'querystring.limit'],
    ['limit=2.5', 'querystring.limit'],
    ['offset=-1', 'querystring.offset'],
    ['perPage=101', 'querystring.perPage'],
    ['perPage=0', 'querystring.perPage'],
    ['page=0', 'querystring.page'],
    ['page=-3', 'querystring.page'],
  ];
  for (const [query, path] of invalid) {
    test(`${query} is 400 VALIDATION_ERROR naming ${path}`, async () => {
      assertInvalid(await usage(`?${query}`), path);
    });
  }

  test('a test key sees no entries whatever the paging', async () => {
    assert.deepEqual(ok(await t.app.inject({ url: '/v1/account/usage?limit=5&offset=2', headers: bearer(c.testApiKey) })), {
      data: [],
      total: 0,
      limit: 5,
      offset: 2,
    });
    assert.deepEqual(ok(await t.app.inject({ url: '/v1/account/usage?page=2&perPage=5', headers: bearer(c.testApiKey) })), {
      data: [],
      total: 0,
      page: 2,
      perPage: 5,
    });
  });

  test("another customer's entries are not counted", async () => {
    const body = ok(await t.app.inject({ url: '/v1/account/usage', headers: bearer(t.customer.apiKey) }));
    assert.deepEqual(body, { data: [], total: 0, limit: 20, offset: 0 });
    assert.equal(ok(await usage()).total, N);
  });
});

describe('GET /ops/audit paging', () => {
  // Audit rows for c: one customer.create (written by the harness) and N credits.add, newest first.
  const AUDIT_TOTAL = N + 1;
  const auditAmounts = (body: { data: { action: string; metadata: { amountCents?: number } | null }[] }) =>
    body.data.map((r) => (r.action === 'credits.add' ? r.metadata!.amountCents : r.action));

  test('the default page, filtered by customer, newest first', async () => {
    const body = ok(await audit(`?customerId=${c.id}`));
    assert.deepEqual(Object.keys(body).sort(), ['data', 'limit', 'offset', 'total']);
    assert.equal(body.total, AUDIT_TOTAL);
    assert.equal(body.limit, 20);
    assert.equal(body.offset, 0);
    assert.deepEqual(auditAmounts(body), down(25, 6));
    for (const row of body.data) {
      assert.equal(row.customerId, c.id);
      assert.equal(row.actorType, 'operator');
      assert.equal(row.resourceType, 'ledger_entry');
    }
  });

  test('limit/offset and page/perPage windows', async () => {
    const last = ok(await audit(`?customerId=${c.id}&limit=3&offset=24`));
    assert.equal(last.total, AUDIT_TOTAL);
    assert.equal(last.limit, 3);
    assert.equal(last.offset, 24);
    assert.deepEqual(auditAmounts(last), [1, 'customer.create']);

    const p = ok(await audit(`?customerId=${c.id}&page=3&perPage=10`));
    assert.deepEqual(Object.keys(p).sort(), ['data', 'page', 'perPage', 'total']);
    assert.equal(p.total, AUDIT_TOTAL);
    assert.equal(p.page, 3);
    assert.equal(p.perPage, 10);
    assert.deepEqual(auditAmounts(p), [...down(5, 1), 'customer.create']);
  });

  test('without a filter the total covers every customer', async () => {
    const all = ok(await audit('?limit=1'));
    // The harness's own customer adds one customer.create row.
    assert.equal(all.total, AUDIT_TOTAL + 1);
    assert.equal(all.data.length, 1);
    assert.equal(all.data[0].action, 'credits.add');
    assert.equal(all.data[0].metadata.amountCents, 25);
    const other = ok(await audit(`?customerId=${t.customer.id}`));
    assert.equal(other.total, 1);
    assert.equal(other.data[0].action, 'customer.create');
    assert.equal(other.data[0].actorType, 'system');
  });

  const invalid: [string, string][] = [
    ['limit=0', 'querystring.limit'],
    ['limit=101', 'querystring.limit'],
    ['offset=-1', 'querystring.offset'],
    ['perPage=101', 'querystring.perPage'],
    ['page=0', 'querystring.page'],
    ['limit=abc', 'querystring.limit'],
    ['customerId=not-a-uuid', 'querystring.customerId'],
  ];
  for (const [query, path] of invalid) {
    test(`/ops/audit?${query} is 400 VALIDATION_ERROR naming ${path}`, async () => {
      assertInvalid(await audit(`?${query}`), path);
    });
  }
});
