// test-lane: once (HTTP headers, limits and parsing at the edge; nothing store-specific)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { z } from 'zod';
import { sameBothWays } from '../src/http/serializer.js';
import { bearer, createTestApp, OPS_TOKEN, type TestApp } from './harness.js';

/** Helmet 8's defaults, as every API answer carries them (errors and unknown paths included). */
const DEFAULT_HEADERS = {
  'content-security-policy':
    "default-src 'self';base-uri 'self';font-src 'self' https: data:;form-action 'self';frame-ancestors 'self';img-src 'self' data:;object-src 'none';script-src 'self';script-src-attr 'none';style-src 'self' https: 'unsafe-inline';upgrade-insecure-requests",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'SAMEORIGIN',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};

const isoDate = z.codec(z.iso.datetime(), z.date(), { decode: (s) => new Date(s), encode: (d) => d.toISOString() });

type LogLine = { level: number; msg: string; reqId?: string; [k: string]: unknown };

let t: TestApp;
const lines: LogLine[] = [];
const linesOf = (reqId: string) => lines.filter((l) => l.reqId === reqId);

before(async () => {
  // The production logger at its default level, writing where the test can read it.
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  t = await createTestApp({
    overrides: { logger },
    beforeReady: (app) => {
      app.get('/test/boom', { config: { auth: 'none' } }, async () => {
        throw new Error('boom');
      });
      const reply = (path: string, schema: z.ZodType, body: unknown) => app.get(path, { schema: { response: { 200: schema } } }, async () => body);
      reply('/test/reply/extra', z.object({ a: z.string() }), { a: 'x', secret: 'y' });
      reply('/test/reply/wrong', z.object({ a: z.string() }), { a: 1 });
      reply('/test/reply/codec', z.object({ at: isoDate }), { at: new Date(0) });
      reply('/test/reply/default', z.object({ n: z.number().default(1) }), {});
    },
  });
});
after(() => t.close());

describe('security headers', () => {
  test("helmet's defaults on a 200, a 401 and a 404", async () => {
    const answers = [
      await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) }),
      await t.app.inject({ url: '/v1/account' }),
      await t.app.inject({ url: '/no/such/path' }),
    ];
    assert.deepEqual(
      answers.map((r) => r.statusCode),
      [200, 401, 404],
    );
    for (const res of answers) {
      for (const [name, value] of Object.entries(DEFAULT_HEADERS)) assert.equal(res.headers[name], value, `${res.statusCode} ${name}`);
      assert.equal(res.headers['x-powered-by'], undefined);
    }
  });

  test("a route's own helmet options replace the defaults, also when its plugin sets them for all its routes (the dashboard)", async () => {
    const dashboard = await t.app.inject({ url: '/dashboard/sign-in' });
    assert.equal(dashboard.statusCode, 200);
    const csp = String(dashboard.headers['content-security-policy']);
    assert.match(csp, /^default-src 'none';/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.equal(dashboard.headers['x-frame-options'], 'DENY');
    assert.equal(dashboard.headers['strict-transport-security'], DEFAULT_HEADERS['strict-transport-security']);

    const page = await t.app.inject({ url: '/verify-document' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-security-policy']), /^default-src 'none';.*form-action 'none'/);
    assert.equal(page.headers['x-frame-options'], 'DENY');
  });
});

describe('request log', () => {
  test('one line per request, at info, when it completes: id, method, route, URL, status and time', async () => {
    const res = await t.app.inject({ url: '/v1/account?x=1', headers: { ...bearer(t.customer.apiKey), 'x-request-id': 'log-one-line' } });
    assert.equal(res.statusCode, 200);
    const mine = linesOf('log-one-line');
    assert.equal(mine.length, 1, JSON.stringify(mine));
    const [line] = mine;
    assert.equal(line.level, 30);
    assert.equal(line.msg, 'request completed');
    assert.equal(line.method, 'GET');
    assert.equal(line.route, '/v1/account');
    // The query is left out: it may carry a credential (see the next test).
    assert.equal(line.url, '/v1/account');
    assert.equal(line.statusCode, 200);
    assert.equal(typeof line.responseTime, 'number');
    assert.ok(!lines.some((l) => l.msg === 'incoming request'));
  });

  test('a read that logs nothing but its access line makes no child logger; a line it does log carries its id', async () => {
    const logger = t.container.logger as unknown as { child: (...args: unknown[]) => unknown };
    const child = logger.child;
    let children = 0;
    logger.child = function (this: unknown, ...args: unknown[]) {
      children++;
      return child.apply(this, args);
    };
    try {
      const res = await t.app.inject({ url: '/v1/account', headers: { ...bearer(t.customer.apiKey), 'x-request-id': 'log-no-child' } });
      assert.equal(res.statusCode, 200);
      assert.equal(children, 0);
      assert.equal(linesOf('log-no-child').length, 1);
      // A request that does log (here a 5xx) gets its child then, and its lines carry the request id.
      await t.app.inject({ url: '/test/boom', headers: { 'x-request-id': 'log-child-made' } });
      assert.equal(children, 1);
      assert.deepEqual(
        linesOf('log-child-made').map((l) => [l.level, l.msg]),
        [
          [50, 'unhandled error'],
          [30, 'request completed'],
        ],
      );
    } finally {
      logger.child = child;
    }
  });

  test('no link token reaches the log: a token route is logged as its pattern, any other path with its token-shaped segments replaced, never the query', async () => {
    // The shape of every link token (signing, verification, sign-in): 43 base64url characters.
    const token = `${'A'.repeat(20)}_-${'b'.repeat(21)}`;
    const id = '0b0c6f1e-8c1d-4a4e-9a51-6f0e2b7d9c11';
    const cases: [string, string, string | undefined][] = [
      [`/sign/${token}`, '/sign/:token', '/sign/:token'],
      [`/sign/${token}/session`, '/sign/:token/session', '/sign/:token/session'],
      [`/verify/${token}`, '/verify/:token', '/verify/:token'],
      [`/dashboard/sign-in/email/${token}`, '/dashboard/sign-in/email/:token', '/dashboard/sign-in/email/:token'],
      // No route: the path as sent, its token replaced.
      [`/sign/${token}/no-such-thing`, '/sign/:token/no-such-thing', undefined],
      // The dashboard's catch-all page (a wildcard route).
      [`/dashboard/no/${token}`, '/dashboard/no/:token', '/dashboard/*'],
      // Ids stay: they name what was asked for, and open nothing.
      [`/v1/envelopes/${id}?code=${token}&state=${token}`, `/v1/envelopes/${id}`, '/v1/envelopes/:id'],
    ];
    for (const [i, [url, logged, route]] of cases.entries()) {
      const reqId = `log-token-${i}`;
      await t.app.inject({ url, headers: { ...bearer(t.customer.apiKey), 'x-request-id': reqId } });
      const mine = linesOf(reqId);
      assert.deepEqual(
        mine.map((l) => [l.msg, l.url, l.route]),
        [['request completed', logged, route]],
        url,
      );
      assert.ok(!JSON.stringify(mine).includes(token), JSON.stringify(mine));
    }
  });

  test('a refused request is one line with its status; an unexpected error is also logged with its stack', async () => {
    await t.app.inject({ url: '/v1/account', headers: { 'x-request-id': 'log-refused' } });
    assert.deepEqual(
      linesOf('log-refused').map((l) => [l.level, l.msg, l.statusCode]),
      [[30, 'request completed', 401]],
    );

    const boom = await t.app.inject({ url: '/test/boom', headers: { 'x-request-id': 'log-boom' } });
    assert.equal(boom.statusCode, 500);
    const logged = linesOf('log-boom');
    const error = logged.find((l) => l.level === 50);
    assert.equal(error?.msg, 'unhandled error');
    assert.match(String((error?.err as { stack?: string })?.stack), /boom/);
    assert.equal(logged.at(-1)?.statusCode, 500);
  });

  test('a mutation is answered once: no "Reply was already sent" and no error logged', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/ops/customers',
      headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json', 'x-request-id': 'log-mutation' },
      payload: JSON.stringify({ email: 'once@example.com', name: 'Once' }),
    });
    assert.equal(res.statusCode, 201, res.body);
    // Fastify reports a second send on the next ticks.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(
      linesOf('log-mutation').map((l) => [l.level, l.msg]),
      [[30, 'request completed']],
    );
  });
});

describe('reply serialization', () => {
  test('a reply is checked against its schema: unnamed fields are dropped, a mismatch is a 500', async () => {
    assert.equal((await t.app.inject({ url: '/test/reply/extra' })).body, '{"a":"x"}');
    const wrong = await t.app.inject({ url: '/test/reply/wrong', headers: { 'x-request-id': 'reply-wrong' } });
    assert.equal(wrong.statusCode, 500);
    assert.equal(wrong.json().code, 'INTERNAL_ERROR');
    assert.ok(linesOf('reply-wrong').some((l) => l.level === 50 && l.msg === 'unhandled error'));
  });

  test('a schema that acts differently when encoding (codec, default) is still encoded', async () => {
    assert.equal((await t.app.inject({ url: '/test/reply/codec' })).body, '{"at":"1970-01-01T00:00:00.000Z"}');
    // Encoding does not fill a default in (a parse would answer {"n":1}): the field is missing, a 500 as before.
    assert.equal((await t.app.inject({ url: '/test/reply/default' })).statusCode, 500);
  });

  test('sameBothWays: plain shapes (nested, recursive) yes; a codec, transform, default or catch anywhere no', () => {
    type Tree = { name: string; children: Tree[] };
    const ZTree: z.ZodType<Tree> = z.object({ name: z.string(), children: z.array(z.lazy(() => ZTree)) });
    for (const plain of [z.object({ id: z.uuid(), at: z.iso.datetime().nullable(), tags: z.array(z.enum(['a', 'b'])), n: z.number().int().optional() }), ZTree, z.union([z.literal(1), z.record(z.string(), z.boolean())])]) {
      assert.equal(sameBothWays(plain), true);
    }
    for (const directional of [z.object({ at: isoDate }), z.object({ n: z.number().default(1) }), z.array(z.string().transform((s) => s.length)), z.object({ a: z.string().catch('') })]) {
      assert.equal(sameBothWays(directional), false);
    }
  });
});

describe('GET /v1/account round trips', () => {
  test('a key seen before costs one query (the customer); its first use three (the key, its last use, the customer)', async () => {
    const c = await t.createCustomer(0);
    // drizzle calls its client's query() for every statement, pool (PostgreSQL) or PGlite alike.
    const client = (t.container.db as unknown as { $client: { query: (...args: unknown[]) => unknown } }).$client;
    const query = client.query;
    let queries = 0;
    client.query = function (this: unknown, ...args: unknown[]) {
      queries++;
      return query.apply(this, args);
    };
    try {
      const counts: number[] = [];
      for (let i = 0; i < 3; i++) {
        queries = 0;
        const res = await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) });
        assert.equal(res.statusCode, 200);
        counts.push(queries);
      }
      assert.deepEqual(counts, [3, 1, 1]);
    } finally {
      client.query = query;
    }
  });

  test("the route's options are built once per request, however many hooks read its config", async () => {
    // Fastify's request.routeOptions is a getter that builds a new object on every read, asking the
    // route's instance (which inherits the root's method) for its version constraint each time.
    const app = t.app as unknown as { hasConstraintStrategy: (name: string) => boolean };
    const has = app.hasConstraintStrategy;
    let reads = 0;
    app.hasConstraintStrategy = function (this: unknown, name: string) {
      if (name === 'version') reads++;
      return has.call(this, name);
    };
    try {
      const res = await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) });
      assert.equal(res.statusCode, 200);
      // Ours once (routeConfigOf), @fastify/rate-limit's once: not once per hook.
      assert.equal(reads, 2);
    } finally {
      app.hasConstraintStrategy = has;
    }
  });
});
