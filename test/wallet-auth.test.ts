/** Wallet sign-in (SIWE challenge and verify) and the wallet JWT in the auth chain. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SignJWT, decodeJwt } from 'jose';
import { sql } from 'drizzle-orm';
import { getAddress } from 'viem';
import { createSiweMessage, parseSiweMessage } from 'viem/siwe';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError } from './fixtures/envelopes.js';
import { challenge, newWallet, signIn, verify } from './fixtures/wallet.js';
import { authPeriodicTasks } from '../src/modules/auth/auth.jobs.js';
import { rowsOf } from '../src/db/client.js';
import { createAuthRepo } from '../src/modules/auth/auth.repo.js';
import { sha256Hex } from '../src/lib/crypto.js';

const query = async <T,>(q: ReturnType<typeof sql>): Promise<T[]> => rowsOf<T>(await t.container.db.execute(q));

const SECRET = new TextEncoder().encode('j'.repeat(64));
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);

let t: TestApp;
before(async () => {
  t = await createTestApp({ overrides: { clock } });
});
after(async () => {
  await t?.close();
});

describe('GET /v1/auth/challenge', () => {
  test('returns a SIWE message bound to PUBLIC_URL, the nonce and a 10-minute expiry', async () => {
    const wallet = newWallet();
    const c = await challenge(t, wallet.address.toLowerCase());
    assert.match(c.nonce, /^[0-9a-f]{32}$/);
    const m = parseSiweMessage(c.message);
    assert.equal(m.domain, 'signet.test');
    assert.equal(m.uri, 'http://signet.test');
    assert.equal(m.nonce, c.nonce);
    assert.equal(m.address, wallet.address, 'the message carries the EIP-55 spelling');
    assert.equal(m.version, '1');
    assert.equal(m.expirationTime!.getTime() - m.issuedAt!.getTime(), 10 * 60_000);
    assert.equal(new Date(c.expiresAt).getTime(), m.expirationTime!.getTime());
  });

  test('anything but 0x and 40 hex digits is 400 INVALID_WALLET_ADDRESS', async () => {
    const good = newWallet().address;
    // A mixed-case address whose EIP-55 checksum is wrong: flip the case of one letter.
    const i = [...good].findIndex((ch, n) => n > 1 && /[a-fA-F]/.test(ch));
    const flipped = good.slice(0, i) + (good[i] === good[i].toUpperCase() ? good[i].toLowerCase() : good[i].toUpperCase()) + good.slice(i + 1);
    for (const bad of ['', 'abc', '0x1234', good.slice(2), `${good}0`, `0X${good.slice(2)}`, `0x${'g'.repeat(40)}`, flipped]) {
      assertError(await t.app.inject({ url: `/v1/auth/challenge?wallet=${encodeURIComponent(bad)}` }), 400, 'INVALID_WALLET_ADDRESS');
    }
    assertError(await t.app.inject({ url: '/v1/auth/challenge' }), 400, 'INVALID_WALLET_ADDRESS');
    // All lower case and all upper case carry no checksum and are accepted.
    await challenge(t, good.toLowerCase());
    await challenge(t, `0x${good.slice(2).toUpperCase()}`);
  });
});

describe('POST /v1/auth/verify', () => {
  test('a signed challenge gives a JWT; the first sign-in creates the customer, a later one signs into it', async () => {
    const wallet = newWallet();
    const first = await signIn(t, wallet);
    assert.equal(first.walletAddress, wallet.address.toLowerCase());
    assert.equal(first.expiresIn, 3600);
    const claims = decodeJwt(first.token);
    assert.equal(claims.sub, wallet.address.toLowerCase());
    assert.equal(claims.iss, 'http://signet.test');
    assert.equal(claims.aud, 'http://signet.test');
    assert.equal(claims.exp! - claims.iat!, 3600);
    assert.equal(new Date(first.expiresAt).getTime(), claims.exp! * 1000);
    assert.match(String(claims.customerId), /^[0-9a-f-]{36}$/);

    const account = await t.app.inject({ url: '/v1/account', headers: bearer(first.token) });
    assert.equal(account.statusCode, 200, account.body);
    assert.equal(account.json().accountId, claims.customerId);
    assert.equal(account.json().walletAddress, wallet.address.toLowerCase());
    assert.equal(account.json().name, wallet.address.toLowerCase());

    const second = await signIn(t, wallet);
    assert.equal(decodeJwt(second.token).customerId, claims.customerId);
  });

  test('missing fields are 400 MISSING_FIELDS', async () => {
    const wallet = newWallet();
    const c = await challenge(t, wallet.address);
    const signature = await wallet.signMessage({ message: c.message });
    for (const body of [{}, { walletAddress: wallet.address, nonce: c.nonce }, { walletAddress: wallet.address, signature }, { nonce: c.nonce, signature }, { walletAddress: '', nonce: c.nonce, signature }]) {
      assertError(await verify(t, body), 400, 'MISSING_FIELDS');
    }
    assertError(await t.app.inject({ method: 'POST', url: '/v1/auth/verify' }), 400, 'MISSING_FIELDS');
    // The nonce survived the refusals.
    assert.equal((await verify(t, { walletAddress: wallet.address, nonce: c.nonce, signature })).statusCode, 200);
  });

  test('an unknown nonce, or one issued to another wallet, is 400 INVALID_NONCE', async () => {
    const wallet = newWallet();
    const c = await challenge(t, wallet.address);
    const signature = await wallet.signMessage({ message: c.message });
    assertError(await verify(t, { walletAddress: wallet.address, nonce: 'f'.repeat(32), signature }), 400, 'INVALID_NONCE');
    const other = newWallet();
    const otherSig = await other.signMessage({ message: c.message.replace(wallet.address, other.address) });
    assertError(await verify(t, { walletAddress: other.address, nonce: c.nonce, signature: otherSig }), 400, 'INVALID_NONCE');
  });

  test('a replayed nonce is 401 NONCE_ALREADY_USED', async () => {
    const wallet = newWallet();
    const c = await challenge(t, wallet.address);
    const signature = await wallet.signMessage({ message: c.message });
    assert.equal((await verify(t, { walletAddress: wallet.address, nonce: c.nonce, signature })).statusCode, 200);
    assertError(await verify(t, { walletAddress: wallet.address, nonce: c.nonce, signature }), 401, 'NONCE_ALREADY_USED');
  });

  test('a challenge past its 10 minutes is 401 CHALLENGE_EXPIRED', async () => {
    const wallet = newWallet();
    const c = await challenge(t, wallet.address);
    const signature = await wallet.signMessage({ message: c.message });
    offsetMs = 10 * 60_000 + 1_000;
    try {
      assertError(await verify(t, { walletAddress: wallet.address, nonce: c.nonce, signature }), 401, 'CHALLENGE_EXPIRED');
    } finally {
      offsetMs = 0;
    }
  });

  test("another wallet's signature, a message for another domain, or a bad signature is 401 INVALID_SIGNATURE and spends no nonce", async () => {
    const wallet = newWallet();
    const c = await challenge(t, wallet.address);
    const intruder = newWallet();
    const send = (signature: string) => verify(t, { walletAddress: wallet.address, nonce: c.nonce, signature });
    assertError(await send(await intruder.signMessage({ message: c.message })), 401, 'INVALID_SIGNATURE');
    // A phishing site relays our nonce inside a message for its own domain.
    const m = parseSiweMessage(c.message);
    const phished = createSiweMessage({ ...m, domain: 'evil.test', uri: 'http://evil.test' } as Parameters<typeof createSiweMessage>[0]);
    assertError(await send(await wallet.signMessage({ message: phished })), 401, 'INVALID_SIGNATURE');
    assertError(await send('0x' + '11'.repeat(65)), 401, 'INVALID_SIGNATURE');
    assertError(await send('not hex'), 401, 'INVALID_SIGNATURE');
    // None of those spent the nonce.
    assert.equal((await send(await wallet.signMessage({ message: c.message }))).statusCode, 200);
  });

  test('a smart-contract wallet signature (not 65 bytes) is refused with 400 CONTRACT_WALLET_UNSUPPORTED', async () => {
    const wallet = newWallet();
    const c = await challenge(t, wallet.address);
    assertError(await verify(t, { walletAddress: wallet.address, nonce: c.nonce, signature: '0x' + 'ab'.repeat(200) }), 400, 'CONTRACT_WALLET_UNSUPPORTED');
  });

  test('five concurrent verifies of one nonce give exactly one token', async () => {
    const wallet = newWallet();
    const c = await challenge(t, wallet.address);
    const signature = await wallet.signMessage({ message: c.message });
    const results = await Promise.all(Array.from({ length: 5 }, () => verify(t, { walletAddress: wallet.address, nonce: c.nonce, signature })));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, results.map((r) => r.body).join('\n'));
    for (const r of results.filter((r) => r.statusCode !== 200)) assertError(r, 401, 'NONCE_ALREADY_USED');
    const customers = await query<{ n: number }>(sql`SELECT count(*)::int AS n FROM customers WHERE wallet_address = ${wallet.address.toLowerCase()}`);
    assert.equal(customers[0].n, 1);
  });

  test('spending a nonce is one conditional UPDATE: of five concurrent spends one wins, and an expired nonce cannot be spent', async () => {
    const repo = createAuthRepo();
    const wallet = newWallet();
    const c = await challenge(t, wallet.address);
    const spend = (now: Date) => t.container.db.transaction((tx) => repo.consumeNonce(tx, { nonceHash: sha256Hex(c.nonce), walletAddress: wallet.address.toLowerCase(), now }));
    assert.equal(await spend(new Date(Date.now() + 10 * 60_000 + 1_000)), false, 'past expiry');
    const results = await Promise.all(Array.from({ length: 5 }, () => spend(new Date())));
    assert.equal(results.filter(Boolean).length, 1);
  });

  test('nonces are stored hashed, and the periodic task purges expired ones', async () => {
    const wallet = newWallet();
    const c = await challenge(t, wallet.address);
    const rows = await query<{ nonce_hash: string }>(sql`SELECT nonce_hash FROM wallet_nonces WHERE wallet_address = ${wallet.address.toLowerCase()}`);
    assert.equal(rows.length, 1);
    assert.notEqual(rows[0].nonce_hash, c.nonce);
    const purge = authPeriodicTasks({ auth: t.container.auth }).find((p) => p.name === 'purge-wallet-nonces')!;
    await t.container.db.transaction((tx) => purge.run(tx));
    assert.equal((await query(sql`SELECT 1 FROM wallet_nonces WHERE wallet_address = ${wallet.address.toLowerCase()}`)).length, 1, 'a live nonce stays');
    offsetMs = 10 * 60_000 + 30_000;
    try {
      await t.container.db.transaction((tx) => purge.run(tx));
    } finally {
      offsetMs = 0;
    }
    assert.equal((await query(sql`SELECT 1 FROM wallet_nonces WHERE wallet_address = ${wallet.address.toLowerCase()}`)).length, 1, 'kept an hour past expiry, to answer CHALLENGE_EXPIRED');
    offsetMs = 10 * 60_000 + 3_600_000 + 30_000;
    try {
      await t.container.db.transaction((tx) => purge.run(tx));
    } finally {
      offsetMs = 0;
    }
    assert.equal((await query(sql`SELECT 1 FROM wallet_nonces WHERE wallet_address = ${wallet.address.toLowerCase()}`)).length, 0);
  });
});

describe('wallet JWT', () => {
  const wallet = newWallet();
  let token: string;
  let customerId: string;
  before(async () => {
    token = (await signIn(t, wallet)).token;
    customerId = String(decodeJwt(token).customerId);
  });
  const sign = (alg: string, claims: Record<string, unknown> = {}, opts: { exp?: number; aud?: string; iss?: string } = {}) =>
    new SignJWT({ customerId, ...claims })
      .setProtectedHeader({ alg })
      .setSubject(wallet.address.toLowerCase())
      .setIssuedAt()
      .setIssuer(opts.iss ?? 'http://signet.test')
      .setAudience(opts.aud ?? 'http://signet.test')
      .setExpirationTime(opts.exp ?? Math.floor(Date.now() / 1000) + 600)
      .sign(SECRET);
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const get = (jwt: string) => t.app.inject({ url: '/v1/account', headers: bearer(jwt) });

  test('a valid token resolves to its customer (via wallet_jwt, live)', async () => {
    const res = await get(token);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().accountId, customerId);
    assert.equal(res.json().mode, 'live');
    assert.equal((await get(await sign('HS256'))).statusCode, 200, 'a token made with the same key and claims is accepted');
  });

  test('tampered, another algorithm, alg none, expired, wrong audience or issuer: 401 TOKEN_INVALID', async () => {
    const [h, p, s] = token.split('.');
    const payload = decodeJwt(token);
    const tampered = `${h}.${b64({ ...payload, customerId: t.customer.id })}.${s}`;
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`;
    const badSig = `${h}.${p}.${s.slice(0, -4)}${s.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    const cases = {
      tampered,
      none,
      badSig,
      hs512: await sign('HS512'),
      expired: await sign('HS256', {}, { exp: Math.floor(Date.now() / 1000) - 10 }),
      audience: await sign('HS256', {}, { aud: 'http://other.test' }),
      issuer: await sign('HS256', {}, { iss: 'http://other.test' }),
      otherKey: await new SignJWT({ customerId }).setProtectedHeader({ alg: 'HS256' }).setSubject(wallet.address.toLowerCase()).setIssuedAt().setIssuer('http://signet.test').setAudience('http://signet.test').setExpirationTime('10m').sign(new TextEncoder().encode('k'.repeat(64))),
      noCustomer: await sign('HS256', { customerId: undefined }),
    };
    for (const [name, jwt] of Object.entries(cases)) {
      const res = await get(jwt);
      assert.equal(res.statusCode, 401, `${name}: ${res.body}`);
      assert.equal(res.json().code, 'TOKEN_INVALID', `${name}: ${res.body}`);
    }
  });

  test('the JWT expires after 3600 seconds (the server clock)', async () => {
    offsetMs = 3601_000;
    try {
      assertError(await get(token), 401, 'TOKEN_INVALID');
    } finally {
      offsetMs = 0;
    }
  });

  test('the token names the wallet in lower case whatever spelling signed in', async () => {
    assert.equal(decodeJwt(token).sub, getAddress(wallet.address).toLowerCase());
  });
});
