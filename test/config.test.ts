// test-lane: once (parses the environment; opens no database)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ConfigError, loadConfig, parseDurations } from '../src/config.js';
import { RUN_TS } from './fixtures/run-ts.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const OPS = 'given-ops-token-0123456789';
const JWT = 'given-jwt-secret-'.padEnd(40, 'x');

let tmp: string;
before(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'signet-config-'));
});
after(() => rmSync(tmp, { recursive: true, force: true }));

/** A DATA_DIR that does not exist yet, under the run's temporary directory. */
let dirs = 0;
const freshDir = () => path.join(tmp, `data-${++dirs}`, 'nested');

describe('a bad value', () => {
  const cases: [string, string][] = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['RATE_LIMIT_MAX', '0'],
    ['DATABASE_URL', 'mysql://x'],
    ['WEBHOOK_RETRY_SCHEDULE', '5x'],
    ['WEBHOOK_RETRY_SCHEDULE', '1m,,5m'],
    ['PUBLIC_URL', 'ftp://example.com'],
    ['LOG_LEVEL', 'loud'],
    ['WORKER_ENABLED', 'yes'],
    ['JWT_SECRET', 'short'],
    ['STRIPE_SECRET_KEY', 'pk_live_publishable'],
    ['STRIPE_WEBHOOK_SECRET', 'not-a-whsec'],
    ['STRIPE_API_URL', 'ftp://stripe.example'],
    // Durations the queue and the idempotency records compute as ::int milliseconds (config-durations.ts).
    ['JOB_LEASE_MS', '2147483648'],
    ['WEBHOOK_RETRY_SCHEDULE', '1m,600h'],
    ['IDEMPOTENCY_TTL_HOURS', '720'],
    ['DOCUMENSO_TIMEOUT_MS', '100'],
    ['DOCUMENSO_TIMEOUT_MS', '600000'],
  ];
  for (const [name, value] of cases) {
    test(`${name}=${value} throws ConfigError in one line naming ${name}`, () => {
      const dataDir = freshDir();
      assert.throws(
        () => loadConfig({ DATA_DIR: dataDir, [name]: value }),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError, `ConfigError, got ${String(err)}`);
          assert.ok(!err.message.includes('\n'), `one line: ${JSON.stringify(err.message)}`);
          assert.match(err.message, new RegExp(`^Invalid configuration: ${name}: `));
          // The rejected value may be a secret or a URL with a password: it is never echoed.
          assert.ok(!err.message.includes(value), `value echoed: ${err.message}`);
          return true;
        },
      );
      // Validation fails before any secret is generated.
      assert.equal(existsSync(dataDir), false);
    });
  }
});

describe('defaults', () => {
  test('match DESIGN.md section 5', () => {
    const c = loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT });
    assert.equal(c.port, 3000);
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.publicUrl, 'http://localhost:3000');
    assert.equal(c.signingUrl, 'http://localhost:3000/sign');
    assert.equal(c.dashboardUrl, 'http://localhost:3000/dashboard');
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.smtpUrl, undefined);
    assert.equal(c.s2sKey, undefined);
    assert.deepEqual(c.webhookRetryScheduleMs, [60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000]);
    assert.equal(c.webhookTimeoutMs, 10_000);
    assert.equal(c.webhookDisableAfter, 50);
    assert.deepEqual(c.webhookAllowHosts, []);
    assert.equal(c.schedulerIntervalMs, 5_000);
    assert.equal(c.maxPdfBytes, 26_214_400);
    assert.equal(c.rateLimitMax, 600);
    assert.equal(c.rateLimitWindowMs, 60_000);
    assert.equal(c.sandboxLimit, 100);
    assert.equal(c.idempotencyTtlHours, 24);
    assert.equal(c.envelopeExpiryDays, 30);
    assert.equal(c.storageExpiryDays, 365);
    assert.equal(c.workerEnabled, true);
    assert.equal(c.logLevel, 'info');
    assert.equal(c.trustProxy, false);
    assert.ok(Object.isFrozen(c));
  });

  test('DATA_DIR defaults to ./data, resolved against the working directory', () => {
    // Every secret is given, so nothing is written to ./data.
    const c = loadConfig({ OPS_TOKEN: OPS, JWT_SECRET: JWT, SIGNING_LINK_SECRET: JWT });
    assert.equal(c.dataDir, path.resolve('./data'));
    assert.deepEqual(c.generatedSecrets, []);
  });

  test('the URLs follow PORT and PUBLIC_URL, without a trailing slash', () => {
    const byPort = loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, PORT: '8080' });
    assert.equal(byPort.port, 8080);
    assert.equal(byPort.publicUrl, 'http://localhost:8080');
    assert.equal(byPort.signingUrl, 'http://localhost:8080/sign');

    const byUrl = loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, PUBLIC_URL: 'https://sign.example.com/' });
    assert.equal(byUrl.publicUrl, 'https://sign.example.com');
    assert.equal(byUrl.signingUrl, 'https://sign.example.com/sign');
    assert.equal(byUrl.dashboardUrl, 'https://sign.example.com/dashboard');

    const explicit = loadConfig({
      DATA_DIR: freshDir(),
      OPS_TOKEN: OPS,
      JWT_SECRET: JWT,
      PUBLIC_URL: 'https://api.example.com',
      SIGNING_URL: 'https://s.example.com/x/',
      DASHBOARD_URL: 'https://app.example.com',
    });
    assert.equal(explicit.signingUrl, 'https://s.example.com/x');
    assert.equal(explicit.dashboardUrl, 'https://app.example.com');
  });

  test('an empty optional variable counts as unset', () => {
    const c = loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, DATABASE_URL: '', PUBLIC_URL: '', S2S_KEY: '' });
    assert.equal(c.databaseUrl, undefined);
    assert.equal(c.publicUrl, 'http://localhost:3000');
    assert.equal(c.s2sKey, undefined);
  });

  // PORT= (as compose files write an unset variable) must not mean port 0.
  test('an empty numeric variable counts as unset', () => {
    const c = loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, PORT: '', SANDBOX_LIMIT: '' });
    assert.equal(c.port, 3000);
    assert.equal(c.sandboxLimit, 100);
  });

  test('given values are parsed', () => {
    const c = loadConfig({
      DATA_DIR: freshDir(),
      OPS_TOKEN: OPS,
      JWT_SECRET: JWT,
      DATABASE_URL: 'postgresql://u@db:5432/signet',
      SANDBOX_LIMIT: '0',
      RATE_LIMIT_MAX: '5',
      WEBHOOK_ALLOW_HOSTS: ' LocalHost , 127.0.0.1,,',
      WORKER_ENABLED: '0',
    });
    assert.equal(c.databaseUrl, 'postgresql://u@db:5432/signet');
    assert.equal(c.sandboxLimit, 0);
    assert.equal(c.rateLimitMax, 5);
    assert.deepEqual(c.webhookAllowHosts, ['localhost', '127.0.0.1']);
    assert.equal(c.workerEnabled, false);
  });
});

describe('WEBHOOK_RETRY_SCHEDULE', () => {
  test('the Alt schedule 0s,1m,5m,30m,2h parses', () => {
    const c = loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, WEBHOOK_RETRY_SCHEDULE: '0s,1m,5m,30m,2h' });
    assert.deepEqual(c.webhookRetryScheduleMs, [0, 60_000, 300_000, 1_800_000, 7_200_000]);
  });

  test('parseDurations accepts spaces and rejects unknown units', () => {
    assert.deepEqual(parseDurations(' 30s , 2m,1h '), [30_000, 120_000, 3_600_000]);
    assert.throws(() => parseDurations('1d'), /entry 1 is not a duration/);
    assert.throws(() => parseDurations('30s,-1m'), /entry 2 is not a duration/);
  });
});

describe('TRUST_PROXY', () => {
  const trust = (value: string) => loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, SIGNING_LINK_SECRET: JWT, TRUST_PROXY: value }).trustProxy;

  test("off when unset, empty, false or 0; the proxies' addresses, CIDRs and named ranges; or a hop count", () => {
    for (const off of ['', 'false', 'FALSE', '0']) assert.equal(trust(off), false, off);
    assert.deepEqual(trust(' 10.0.0.5, 192.168.0.0/16,FD00::/8 ,::1,loopback'), ['10.0.0.5', '192.168.0.0/16', 'fd00::/8', '::1', 'loopback']);
    assert.equal(trust('1'), 1);
    assert.equal(trust('2'), 2);
  });

  test('true is refused at start, saying why and what to set instead', () => {
    for (const value of ['true', 'TRUE']) {
      assert.throws(() => trust(value), (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /^Invalid configuration: TRUST_PROXY: true is no longer accepted: it believes the left-most X-Forwarded-For entry, which the client writes\. Name the proxies/);
        assert.ok(!err.message.includes('\n'));
        return true;
      });
    }
  });

  test('anything else is refused, naming the entry', () => {
    assert.throws(() => trust('17'), /TRUST_PROXY: a hop count must be 1 to 16/);
    assert.throws(() => trust('10.0.0.300'), /TRUST_PROXY: entry 1 is not an IP address, a CIDR/);
    assert.throws(() => trust('10.0.0.5,nginx'), /TRUST_PROXY: entry 2 is not/);
    for (const bad of ['10.0.0.0/33', '10.0.0.0/0', 'fd00::/129', '10.0.0.0/8/8', '10.0.0.0/', '10.0.0.5,', 'yes']) {
      assert.throws(() => trust(bad), /TRUST_PROXY: entry \d is not/, bad);
    }
  });
});

describe('generated secrets', () => {
  test('a fresh DATA_DIR gets ops-token and jwt-secret with mode 0600, read back on the next start', () => {
    const dataDir = freshDir();
    const first = loadConfig({ DATA_DIR: dataDir });
    const opsFile = path.join(dataDir, 'ops-token');
    const jwtFile = path.join(dataDir, 'jwt-secret');
    assert.equal(statSync(opsFile).mode & 0o777, 0o600);
    assert.equal(statSync(jwtFile).mode & 0o777, 0o600);
    assert.match(first.opsToken, /^[0-9a-f]{64}$/);
    assert.match(first.jwtSecret, /^[0-9a-f]{64}$/);
    assert.notEqual(first.opsToken, first.jwtSecret);
    assert.equal(readFileSync(opsFile, 'utf8').trim(), first.opsToken);
    assert.equal(readFileSync(jwtFile, 'utf8').trim(), first.jwtSecret);
    assert.deepEqual(first.generatedSecrets, [
      { name: 'OPS_TOKEN', file: opsFile },
      { name: 'JWT_SECRET', file: jwtFile },
      { name: 'SIGNING_LINK_SECRET', file: path.join(dataDir, 'signing-link-secret') },
    ]);

    const second = loadConfig({ DATA_DIR: dataDir });
    assert.equal(second.opsToken, first.opsToken);
    assert.equal(second.jwtSecret, first.jwtSecret);
    assert.deepEqual(second.generatedSecrets, []);
    // Read back, not generated, but still this node's own: what the shared-secrets check compares.
    assert.deepEqual(second.dataDirSecrets, first.generatedSecrets);
  });

  test('two fresh data directories get different secrets', () => {
    const a = loadConfig({ DATA_DIR: freshDir() });
    const b = loadConfig({ DATA_DIR: freshDir() });
    assert.notEqual(a.opsToken, b.opsToken);
    assert.notEqual(a.jwtSecret, b.jwtSecret);
  });

  test('values given in the environment win over the files and leave them alone', () => {
    const dataDir = freshDir();
    const stored = loadConfig({ DATA_DIR: dataDir });
    const given = loadConfig({ DATA_DIR: dataDir, OPS_TOKEN: OPS, JWT_SECRET: JWT });
    assert.equal(given.opsToken, OPS);
    assert.equal(given.jwtSecret, JWT);
    assert.deepEqual(given.generatedSecrets, []);
    assert.deepEqual(given.dataDirSecrets.map((s) => s.name), ['SIGNING_LINK_SECRET']);
    assert.equal(readFileSync(path.join(dataDir, 'ops-token'), 'utf8').trim(), stored.opsToken);
    assert.equal(readFileSync(path.join(dataDir, 'jwt-secret'), 'utf8').trim(), stored.jwtSecret);
  });

  test('given values write no files', () => {
    const dataDir = freshDir();
    loadConfig({ DATA_DIR: dataDir, OPS_TOKEN: OPS, JWT_SECRET: JWT });
    assert.equal(existsSync(path.join(dataDir, 'ops-token')), false);
    assert.equal(existsSync(path.join(dataDir, 'jwt-secret')), false);
  });
});

describe('signet serve', () => {
  test('with PORT=abc exits non-zero printing one line naming PORT', async () => {
    const dataDir = freshDir();
    const err = await run(process.execPath, [...RUN_TS, 'src/cli.ts', 'serve'], {
      cwd: ROOT,
      env: { ...process.env, PORT: 'abc', DATA_DIR: dataDir },
      timeout: 30_000,
    }).then(
      () => assert.fail('serve started with PORT=abc'),
      (e: { code?: number; stdout: string; stderr: string }) => e,
    );
    assert.equal(typeof err.code, 'number');
    assert.notEqual(err.code, 0);
    const lines = err.stderr.trim().split('\n');
    assert.equal(lines.length, 1, err.stderr);
    assert.match(lines[0], /^Invalid configuration: PORT: /);
    assert.equal(err.stdout, '');
    assert.equal(existsSync(dataDir), false);
  });
});

describe('Stripe', () => {
  test('is off without STRIPE_SECRET_KEY, and a webhook secret or API URL alone is a mistake', () => {
    assert.equal(loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT }).stripe, undefined);
    for (const name of ['STRIPE_WEBHOOK_SECRET', 'STRIPE_API_URL']) {
      const value = name === 'STRIPE_API_URL' ? 'http://127.0.0.1:12111' : 'whsec_abc123';
      const dataDir = freshDir();
      assert.throws(() => loadConfig({ DATA_DIR: dataDir, [name]: value }), (err: unknown) => err instanceof ConfigError && err.message === `Invalid configuration: ${name}: requires STRIPE_SECRET_KEY`);
      assert.equal(existsSync(dataDir), false, 'refused before any secret is generated');
    }
  });

  test('with a key: the webhook secret and API URL as given', () => {
    const c = loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, STRIPE_SECRET_KEY: 'sk_test_abc123', STRIPE_WEBHOOK_SECRET: 'whsec_abc123', STRIPE_API_URL: 'http://127.0.0.1:12111/' });
    assert.deepEqual(c.stripe, { secretKey: 'sk_test_abc123', webhookSecret: 'whsec_abc123', apiUrl: 'http://127.0.0.1:12111' });
    assert.deepEqual(loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, STRIPE_SECRET_KEY: 'rk_live_abc' }).stripe, { secretKey: 'rk_live_abc', webhookSecret: undefined, apiUrl: undefined });
  });
});

test('DOCUMENSO_TIMEOUT_MS: each call to Documenso is bounded by 10 s unless set', () => {
  const documenso = { SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: 'http://127.0.0.1:9/api/v2', DOCUMENSO_API_KEY: 'api_abc', DOCUMENSO_WEBHOOK_SECRET: 'w'.repeat(16) };
  const timeoutOf = (env: Record<string, string>) => loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, ...documenso, ...env }).documenso?.timeoutMs;
  assert.equal(timeoutOf({}), 10_000);
  assert.equal(timeoutOf({ DOCUMENSO_TIMEOUT_MS: '4000' }), 4000);
});

test("PGLITE_SHARED_BUFFERS_MB: PGlite's page cache is 8 MB unless set", () => {
  const poolOf = (env: Record<string, string>) => loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, ...env }).pgliteSharedBuffersMb;
  assert.equal(poolOf({}), 8);
  assert.equal(poolOf({ PGLITE_SHARED_BUFFERS_MB: '128' }), 128);
});

describe('sealing settings (config-signing.ts)', () => {
  const load = (env: Record<string, string>) => loadConfig({ DATA_DIR: freshDir(), OPS_TOKEN: OPS, JWT_SECRET: JWT, SIGNING_LINK_SECRET: JWT, ...env }).signing;
  const refused = (env: Record<string, string>, pattern: RegExp) => assert.throws(() => load(env), (err: unknown) => err instanceof ConfigError && pattern.test(err.message) && !err.message.includes('\n'));

  test('B-B without a TSA, B-T with one; the level as given otherwise', () => {
    assert.equal(load({}).level, 'B-B');
    assert.equal(load({}).tsa, undefined);
    const t = load({ SIGNING_TSA_URL: 'https://tsa.example.com/tsr', SIGNING_TSA_URL_2: 'http://tsa2.example.com' });
    assert.equal(t.level, 'B-T');
    assert.deepEqual(t.tsa?.urls, ['https://tsa.example.com/tsr', 'http://tsa2.example.com']);
    assert.equal(t.tsa?.timeoutMs, 10_000);
    assert.equal(t.tsa?.name, 'tsa.example.com');
    assert.equal(load({ SIGNING_TSA_URL: 'https://tsa.example.com', SIGNING_PADES_LEVEL: 'B-LTA', SIGNING_TSA_TIMEOUT_MS: '2500' }).level, 'B-LTA');
    assert.equal(load({ SIGNING_TSA_URL: 'https://tsa.example.com', SIGNING_PADES_LEVEL: 'B-B' }).level, 'B-B');
  });

  test('credentials become the request headers: basic auth, or one header as given', () => {
    assert.deepEqual(load({ SIGNING_TSA_URL: 'https://tsa.example.com', SIGNING_TSA_USERNAME: 'u', SIGNING_TSA_PASSWORD: 'p:w' }).tsa?.headers, { authorization: `Basic ${Buffer.from('u:p:w').toString('base64')}` });
    assert.deepEqual(load({ SIGNING_TSA_URL: 'https://tsa.example.com', SIGNING_TSA_HEADER: 'X-Api-Key: k: 1' }).tsa?.headers, { 'x-api-key': 'k: 1' });
  });

  test('a level that needs a TSA, half a credential, or settings with no TSA are refused at start, without echoing secrets', () => {
    for (const level of ['B-T', 'B-LT', 'B-LTA']) refused({ SIGNING_PADES_LEVEL: level }, new RegExp(`SIGNING_PADES_LEVEL: ${level} needs a timestamp authority: set SIGNING_TSA_URL`));
    refused({ SIGNING_PADES_LEVEL: 'B-X' }, /SIGNING_PADES_LEVEL/);
    refused({ SIGNING_TSA_URL: 'https://tsa.example.com', SIGNING_TSA_USERNAME: 'u' }, /SIGNING_TSA_PASSWORD: set both/);
    refused({ SIGNING_TSA_URL: 'https://tsa.example.com', SIGNING_TSA_PASSWORD: 'secret-pw' }, /SIGNING_TSA_USERNAME: set both/);
    refused({ SIGNING_TSA_URL: 'https://tsa.example.com', SIGNING_TSA_HEADER: 'no colon here' }, /SIGNING_TSA_HEADER: must be "Name: value"/);
    refused({ SIGNING_TSA_URL_2: 'https://tsa.example.com' }, /SIGNING_TSA_URL_2: requires SIGNING_TSA_URL/);
    refused({ SIGNING_TSA_HEADER: 'X-Key: v' }, /SIGNING_TSA_HEADER: requires SIGNING_TSA_URL/);
    refused({ SIGNING_ARCHIVE_RETIMESTAMP_DAYS: '30' }, /SIGNING_ARCHIVE_RETIMESTAMP_DAYS: requires SIGNING_TSA_URL/);
    assert.throws(() => load({ SIGNING_TSA_URL: 'https://tsa.example.com', SIGNING_TSA_PASSWORD: 'secret-pw' }), (err: Error) => !err.message.includes('secret-pw'));
  });
});
