import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../src/config.js';
import { OPS_TOKEN, bearer, createTestApp, type TestApp } from './harness.js';

const unknownKey = () => `svc_live_${randomBytes(16).toString('hex')}`;

function assertLimited(res: LightMyRequestResponse) {
  assert.equal(res.statusCode, 429, res.body);
  assert.equal(res.json().code, 'RATE_LIMITED');
  const retryAfter = Number(res.headers['retry-after']);
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${res.headers['retry-after']}`);
  assert.equal(res.json().retryAfterSeconds, retryAfter);
}

describe('failed authentication is limited per IP, before authentication', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_MS: '60000' } });
  });
  after(() => t.close());

  const account = (headers: Record<string, string>, ip: string) => t.app.inject({ url: '/v1/account', headers, remoteAddress: ip });

  test('past AUTH_FAILURE_LIMIT refused credentials an IP gets 429 RATE_LIMITED, even with a valid key; other IPs do not', async () => {
    const ip = '203.0.113.1';
    for (let i = 0; i < 3; i++) assert.equal((await account(bearer(unknownKey()), ip)).statusCode, 401);
    assertLimited(await account(bearer(unknownKey()), ip));
    // Refused before the credential is looked at: a correct guess would not get through either.
    assertLimited(await account(bearer(t.customer.apiKey), ip));
    assertLimited(await t.app.inject({ url: '/ops/audit', headers: bearer(OPS_TOKEN), remoteAddress: ip }));
    // Another address is not affected.
    assert.equal((await account(bearer(t.customer.apiKey), '203.0.113.2')).statusCode, 200);
    assert.equal((await account(bearer(unknownKey()), '203.0.113.2')).statusCode, 401);
    // Public routes stay open.
    assert.equal((await t.app.inject({ url: '/health', remoteAddress: ip })).statusCode !== 429, true);
  });

  test('wrong operator tokens count too', async () => {
    const ip = '203.0.113.3';
    for (let i = 0; i < 3; i++) {
      assert.equal((await t.app.inject({ url: '/ops/audit', headers: bearer(`wrong-ops-token-${i}-0123456789`), remoteAddress: ip })).statusCode, 401);
    }
    assertLimited(await t.app.inject({ url: '/ops/audit', headers: bearer(OPS_TOKEN), remoteAddress: ip }));
  });

  test('successful requests do not count, and keep their per-customer budget', async () => {
    const ip = '203.0.113.4';
    for (let i = 0; i < 10; i++) assert.equal((await account(bearer(t.customer.apiKey), ip)).statusCode, 200);
    for (let i = 0; i < 2; i++) assert.equal((await account(bearer(unknownKey()), ip)).statusCode, 401);
    assert.equal((await account(bearer(t.customer.apiKey), ip)).statusCode, 200);
  });

  test('a missing or malformed credential is refused without a lookup and does not count', async () => {
    const ip = '203.0.113.5';
    for (let i = 0; i < 10; i++) {
      assert.equal((await account({}, ip)).statusCode, 401);
      assert.equal((await account(bearer('svc_live_short'), ip)).statusCode, 401);
    }
    assert.equal((await account(bearer(t.customer.apiKey), ip)).statusCode, 200);
  });
});

test('the failure count resets after AUTH_FAILURE_WINDOW_MS; AUTH_FAILURE_LIMIT=0 turns it off', async () => {
  const t = await createTestApp({ env: { AUTH_FAILURE_LIMIT: '2', AUTH_FAILURE_WINDOW_MS: '300' } });
  const off = await createTestApp({ env: { AUTH_FAILURE_LIMIT: '0' } });
  try {
    const ip = '198.51.100.1';
    for (let i = 0; i < 2; i++) assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(unknownKey()), remoteAddress: ip })).statusCode, 401);
    assertLimited(await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey), remoteAddress: ip }));
    await new Promise((r) => setTimeout(r, 350));
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey), remoteAddress: ip })).statusCode, 200);

    for (let i = 0; i < 20; i++) assert.equal((await off.app.inject({ url: '/v1/account', headers: bearer(unknownKey()), remoteAddress: ip })).statusCode, 401);
  } finally {
    await t.close();
    await off.close();
  }
});

test('AUTH_FAILURE_LIMIT and AUTH_FAILURE_WINDOW_MS have defaults and are validated', (ctx) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-auth-limit-'));
  ctx.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const base = { DATA_DIR: dataDir, OPS_TOKEN, JWT_SECRET: 'j'.repeat(64) };
  const c = loadConfig(base);
  assert.equal(c.authFailureLimit, 30);
  assert.equal(c.authFailureWindowMs, 60_000);
  assert.throws(() => loadConfig({ ...base, AUTH_FAILURE_LIMIT: '-1' }), /AUTH_FAILURE_LIMIT/);
  assert.throws(() => loadConfig({ ...base, AUTH_FAILURE_WINDOW_MS: '10' }), /AUTH_FAILURE_WINDOW_MS/);
});
