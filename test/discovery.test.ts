import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { OpenAPIV3_1 } from 'openapi-types';
import { OPS_TOKEN, bearer, createTestApp, type TestApp } from './harness.js';
import { RUN_TS } from './fixtures/run-ts.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const PACKAGE_VERSION: string = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;

type CliResult = { code: number; stdout: string; stderr: string };

/**
 * Runs `signet …` from source as an operator would; never throws, so exit codes can be asserted.
 * `timeoutMs` bounds a hung process, not a speed: a first `migrate` runs PGlite's initdb, some 5-7 s of
 * CPU that takes a minute of wall time when the lane's other files share the two cores.
 */
async function cli(args: string[], env: Record<string, string | undefined>, timeoutMs = 30_000): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...RUN_TS, 'src/cli.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      timeout: timeoutMs,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(() => t.close());

describe('GET /health', () => {
  test('answers 200 with the version while the database answers', async () => {
    const res = await t.app.inject({ url: '/health' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { status: 'ok', version: PACKAGE_VERSION, engine: { name: 'local' }, checks: { database: 'ok', storage: 'ok' } });
  });

  test('answers 503 SERVICE_UNAVAILABLE once the database is gone', async () => {
    const own = await createTestApp();
    try {
      const healthy = await own.app.inject({ url: '/health' });
      assert.equal(healthy.statusCode, 200);
      await own.container.database.close();
      const res = await own.app.inject({ url: '/health' });
      assert.equal(res.statusCode, 503, res.body);
      assert.deepEqual(res.json(), {
        status: 'unavailable',
        version: PACKAGE_VERSION,
        engine: { name: 'local' },
        checks: { database: 'failed', storage: 'ok' },
        code: 'SERVICE_UNAVAILABLE',
        error: 'The database is unreachable',
      });
    } finally {
      // own.close() would close the database a second time; release the rest by hand.
      await own.app.close();
      await own.container.worker.stop();
      await own.container.database.dropSchema?.();
      rmSync(own.config.dataDir, { recursive: true, force: true });
    }
  });
});

describe('GET /openapi.json', () => {
  let doc: OpenAPIV3_1.Document;
  before(async () => {
    const res = await t.app.inject({ url: '/openapi.json' });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    doc = res.json();
  });

  test('is a valid OpenAPI 3.1 document', async () => {
    await SwaggerParser.validate(structuredClone(doc) as never);
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, 'v1');
    assert.equal(doc.info.title, 'Signet API');
    assert.deepEqual(doc.servers, [{ url: 'http://signet.test' }]);
  });

  test('documents the account routes with their 200 and 401 responses', () => {
    for (const p of ['/v1/account', '/v1/account/usage']) {
      const op = doc.paths?.[p]?.get;
      assert.ok(op, `GET ${p} is documented`);
      assert.ok(op.responses?.['200'], `GET ${p} documents 200`);
      assert.ok(op.responses?.['401'], `GET ${p} documents 401`);
      assert.deepEqual(op.security, [{ apiKey: [] }, { walletJwt: [] }]);
    }
  });

  test('declares the four security schemes', () => {
    const schemes = doc.components?.securitySchemes ?? {};
    assert.deepEqual(Object.keys(schemes).sort(), ['apiKey', 'sessionCookie', 'walletJwt', 'x402']);
    assert.deepEqual(schemes.sessionCookie, { ...schemes.sessionCookie, type: 'apiKey', in: 'cookie', name: 'svc_session' });
    assert.deepEqual(schemes.apiKey, { ...schemes.apiKey, type: 'http', scheme: 'bearer' });
    assert.deepEqual(schemes.walletJwt, { ...schemes.walletJwt, type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    assert.deepEqual(schemes.x402, { ...schemes.x402, type: 'apiKey', in: 'header', name: 'PAYMENT-SIGNATURE' });
  });

  test('leaves out the operator API and the discovery documents themselves', () => {
    const paths = Object.keys(doc.paths ?? {});
    assert.ok(paths.length > 0);
    assert.deepEqual(paths.filter((p) => p.startsWith('/ops')), []);
    assert.ok(!paths.includes('/openapi.json'));
    assert.ok(!paths.includes('/llms.txt'));
  });
});

describe('GET /llms.txt', () => {
  test('is plain text naming the routes and the prices', async () => {
    const res = await t.app.inject({ url: '/llms.txt' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    const text = res.body;
    assert.match(text, /^# Signet\n/);
    assert.match(text, /^- GET \/v1\/account: /m);
    assert.match(text, /^- GET \/v1\/account\/usage: /m);
    assert.ok(text.includes('USD 0.10'), 'envelope price');
    assert.ok(text.includes('USD 0.50'), 'verification price');
    assert.ok(text.includes('Base URL: http://signet.test'));
    assert.ok(!text.includes('/ops/'), 'the operator API stays out');
  });
});

describe('signet CLI', () => {
  let baseUrl: string;
  let dataDir: string;
  before(async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    assert.ok(address && typeof address === 'object');
    baseUrl = `http://127.0.0.1:${address.port}`;
    dataDir = mkdtempSync(path.join(tmpdir(), 'signet-cli-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test('--help prints the usage and exits 0', async () => {
    const r = await cli(['--help'], {});
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Usage: signet <command>/);
    for (const word of ['serve', 'worker', 'migrate', 'ops customers create']) assert.ok(r.stdout.includes(word), word);
  });

  test('an unknown command exits 2 with the usage', async () => {
    const r = await cli(['frobnicate'], {});
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown command "frobnicate"/);
    assert.match(r.stderr, /Usage: signet <command>/);
  });

  test('ops customers create creates a working customer through the operator API', async () => {
    const r = await cli(['ops', 'customers', 'create', '--email', 'cli@example.com', '--name', 'CLI Customer', '--credit-cents', '250'], {
      SIGNET_URL: baseUrl,
      OPS_TOKEN,
      DATA_DIR: dataDir,
    });
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const created = JSON.parse(r.stdout);
    assert.deepEqual(Object.keys(created).sort(), ['apiKey', 'customerId', 'testApiKey']);
    assert.match(created.customerId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.match(created.apiKey, /^svc_live_[0-9a-f]{32}$/);
    assert.match(created.testApiKey, /^svc_test_[0-9a-f]{32}$/);

    const account = await t.app.inject({ url: '/v1/account', headers: bearer(created.apiKey) });
    assert.equal(account.statusCode, 200, account.body);
    assert.equal(account.json().accountId, created.customerId);
    assert.equal(account.json().email, 'cli@example.com');
    assert.equal(account.json().creditsCents, 250);
  });

  test('ops reads the operator token from DATA_DIR/ops-token when OPS_TOKEN is unset', async () => {
    const ownDir = mkdtempSync(path.join(tmpdir(), 'signet-cli-'));
    try {
      writeFileSync(path.join(ownDir, 'ops-token'), `${OPS_TOKEN}\n`, { mode: 0o600 });
      const r = await cli(['ops', 'customers', 'create', '--email', 'file@example.com', '--name', 'File Token'], {
        SIGNET_URL: baseUrl,
        OPS_TOKEN: undefined,
        DATA_DIR: ownDir,
      });
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assert.match(JSON.parse(r.stdout).apiKey, /^svc_live_[0-9a-f]{32}$/);
    } finally {
      rmSync(ownDir, { recursive: true, force: true });
    }
  });

  test('migrate applies the migrations to a new data directory and exits 0; run again it finds nothing to do', { skip: Boolean(process.env.DATABASE_URL) && 'PGlite in DATA_DIR whatever the store: the PGlite lane runs it', timeout: 300_000 }, async () => {
    const ownDir = mkdtempSync(path.join(tmpdir(), 'signet-cli-'));
    try {
      for (const run of ['first', 'second']) {
        const r = await cli(['migrate'], { DATA_DIR: ownDir, DATABASE_URL: undefined, OPS_TOKEN, JWT_SECRET: 'j'.repeat(64), LOG_LEVEL: 'warn' }, 120_000);
        assert.equal(r.code, 0, `${run} run: ${r.stderr}${r.stdout}`);
        assert.match(r.stdout, /Migrations applied/, run);
      }
      assert.ok(existsSync(path.join(ownDir, 'pglite', 'PG_VERSION')), 'the database is in DATA_DIR/pglite');
    } finally {
      rmSync(ownDir, { recursive: true, force: true });
    }
  });

  test('ops with a wrong operator token exits 1 and prints the 401', async () => {
    const r = await cli(['ops', 'customers', 'create', '--email', 'x@example.com', '--name', 'X'], {
      SIGNET_URL: baseUrl,
      OPS_TOKEN: 'wrong-token-0123456789abcdef',
      DATA_DIR: dataDir,
    });
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).code, 'UNAUTHORIZED');
  });
});
