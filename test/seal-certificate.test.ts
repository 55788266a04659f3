// test-lane: once (certificates, and server processes on their own PGlite directory whatever the suite's store)
/**
 * The sealing certificate is checked before a process starts: docs/operating.md's OpenSSL recipe makes one
 * `signet serve` accepts, and each bad P12 is refused with its one line, through the real process and
 * through the check main runs.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../src/config.js';
import { ConfigError } from '../src/config-error.js';
import { checkInWorker, createSealCheck } from '../src/providers/certs/check.js';
import { generateDevP12 } from '../src/providers/certs/signer.js';
import { issue, testCa, writeP12, type Issued } from './fixtures/certs.js';
import { OPS_TOKEN, seedPgliteDataDir } from './harness.js';
import { RUN_TS } from './fixtures/run-ts.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const PASS = 'test-pass';

let tmp: string;
let ca: { root: Issued; intermediate: Issued };
let good: string;
before(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'signet-seal-cert-'));
  ca = testCa();
  const leaf = issue({ cn: 'Good Seal', issuer: ca.intermediate });
  good = writeP12(tmp, 'good.p12', leaf.keys.privateKey, [leaf.cert, ca.intermediate.cert, ca.root.cert], PASS);
});
after(() => rmSync(tmp, { recursive: true, force: true }));

/** The check main runs (container.sealCertificate.check) on this P12. */
const check = (p12Path: string | undefined, passphrase = PASS, allowSelfSigned = false) =>
  createSealCheck(() => checkInWorker({ p12Path, passphrase, dataDir: path.join(tmp, 'dev'), allowSelfSigned })).check();

const refusedWith = (pattern: RegExp) => (err: unknown) => {
  assert.ok(err instanceof ConfigError, `not a ConfigError: ${err}`);
  assert.match(err.message, pattern);
  assert.doesNotMatch(err.message, /\n/, 'one line');
  return true;
};

/** A leaf under the intermediate, written with the chain `chain` picks; returns the P12's path. */
function sealP12(name: string, opts: Partial<Parameters<typeof issue>[0]> = {}, chain = (leaf: Issued) => [leaf.cert, ca.intermediate.cert, ca.root.cert], key?: Issued['keys']) {
  const leaf = issue({ cn: `Seal ${name}`, issuer: ca.intermediate, ...opts });
  return writeP12(tmp, `${name}.p12`, (key ?? leaf.keys).privateKey, chain(leaf), PASS);
}

describe('the check at start', () => {
  test('a CA-issued certificate with its whole chain: configured, no warning', async () => {
    const seal = await check(good);
    assert.equal(seal.certificate, 'configured');
    assert.equal(seal.subject, 'CN=Good Seal');
    assert.equal(seal.issuer, 'CN=Test Intermediate CA');
    assert.equal(seal.selfSigned, false);
    assert.deepEqual(seal.warnings, []);
  });

  test('the development seal: accepted, with its warning', async () => {
    const seal = await check(undefined);
    assert.equal(seal.certificate, 'development');
    assert.equal(seal.subject, 'CN=Signet development seal, O=Signet');
    assert.deepEqual(seal.warnings, ['development seal: not trusted by PDF readers']);
  });

  test('a file that is missing, or not PKCS#12', async () => {
    await assert.rejects(check(path.join(tmp, 'nowhere.p12')), refusedWith(/^Invalid configuration: SIGNING_CERT_P12_PATH: cannot read .*nowhere\.p12: no such file$/));
    const junk = path.join(tmp, 'junk.p12');
    writeFileSync(junk, 'not a certificate');
    await assert.rejects(check(junk), refusedWith(/^Invalid configuration: SIGNING_CERT_P12_PATH: .*junk\.p12 is not a PKCS#12 file Signet can read/));
  });

  test('a wrong passphrase', async () => {
    await assert.rejects(check(good, 'wrong'), refusedWith(/^Invalid configuration: SIGNING_CERT_PASSPHRASE: does not open .*good\.p12 \(wrong passphrase/));
  });

  test('an expired certificate, a certificate not valid yet, an expired intermediate', async () => {
    await assert.rejects(check(sealP12('expired', { from: -400, to: -1 })), refusedWith(/SIGNING_CERT_P12_PATH: the certificate CN=Seal expired in .* expired on \d{4}-\d\d-\d\d; renew it/));
    await assert.rejects(check(sealP12('future', { from: 2, to: 400 })), refusedWith(/SIGNING_CERT_P12_PATH: the certificate CN=Seal future in .* is not valid before \d{4}-\d\d-\d\d/));
    const oldIntermediate = issue({ cn: 'Old Intermediate', ca: true, issuer: ca.root, from: -400, to: -2 });
    const leaf = issue({ cn: 'Under an old intermediate', issuer: oldIntermediate });
    const p12 = writeP12(tmp, 'old-intermediate.p12', leaf.keys.privateKey, [leaf.cert, oldIntermediate.cert, ca.root.cert], PASS);
    await assert.rejects(check(p12), refusedWith(/the certificate CN=Old Intermediate in .* expired on/));
  });

  test('a private key that is not the certificate\'s', async () => {
    const stranger = issue({ cn: 'Stranger', issuer: ca.intermediate });
    await assert.rejects(check(sealP12('mismatch', {}, undefined, stranger.keys)), refusedWith(/SIGNING_CERT_P12_PATH: the private key in .*mismatch\.p12 does not match its certificate CN=Seal mismatch/));
  });

  test('a missing intermediate, and the seal\'s certificate alone', async () => {
    const missing = sealP12('no-intermediate', {}, (leaf) => [leaf.cert, ca.root.cert]);
    await assert.rejects(check(missing), refusedWith(/SIGNING_CERT_P12_PATH: .*no-intermediate\.p12 does not hold the certificate of CN=Test Intermediate CA, which issued CN=Seal no-intermediate: export the P12 with the whole chain/));
    const alone = sealP12('alone', {}, (leaf) => [leaf.cert]);
    await assert.rejects(check(alone), refusedWith(/alone\.p12 does not hold the certificate of CN=Test Intermediate CA/));
    const noRoot = sealP12('no-root', {}, (leaf) => [leaf.cert, ca.intermediate.cert]);
    await assert.rejects(check(noRoot), refusedWith(/no-root\.p12 does not hold the certificate of CN=Test Root CA, which issued CN=Test Intermediate CA/));
  });

  test('a key usage that does not allow signing is refused; one that has nonRepudiation alone is accepted', async () => {
    await assert.rejects(check(sealP12('encipher', { keyUsage: { keyEncipherment: true } })), refusedWith(/does not allow signing: its key usage has neither digitalSignature nor nonRepudiation/));
    assert.deepEqual((await check(sealP12('nr', { keyUsage: { nonRepudiation: true } }))).warnings, []);
  });

  test('an extended key usage with no document-signing purpose (a TLS certificate) is accepted with a warning', async () => {
    const seal = await check(sealP12('tls', { extKeyUsage: { serverAuth: true } }));
    assert.deepEqual(seal.warnings, ['extended key usage (1.3.6.1.5.5.7.3.1) names no document-signing purpose: Adobe Acrobat may reject the signature']);
    assert.deepEqual((await check(sealP12('smime', { extKeyUsage: { emailProtection: true } }))).warnings, []);
  });

  test('SIGNING_CERT_ALLOW_SELF_SIGNED without SIGNING_CERT_P12_PATH is a mistake', () => {
    const dataDir = path.join(tmp, 'config-only');
    assert.throws(() => loadConfig({ DATA_DIR: dataDir, SIGNING_CERT_ALLOW_SELF_SIGNED: 'true' }), refusedWith(/^Invalid configuration: SIGNING_CERT_ALLOW_SELF_SIGNED: requires SIGNING_CERT_P12_PATH$/));
    assert.equal(existsSync(dataDir), false, 'refused before any secret is generated');
    assert.equal(loadConfig({ DATA_DIR: dataDir, OPS_TOKEN, JWT_SECRET: 'j'.repeat(64) }).signingCertAllowSelfSigned, false);
  });

  test('a self-signed operator certificate: refused, unless SIGNING_CERT_ALLOW_SELF_SIGNED', async () => {
    const own = path.join(tmp, 'own.p12');
    writeFileSync(own, generateDevP12(PASS, 'Our Own Seal'));
    await assert.rejects(check(own), refusedWith(/CN=Our Own Seal, O=Signet\) is self-signed, which PDF readers do not trust: .*SIGNING_CERT_ALLOW_SELF_SIGNED=true/));
    const seal = await check(own, PASS, true);
    assert.equal(seal.certificate, 'configured');
    assert.equal(seal.selfSigned, true);
    assert.deepEqual(seal.warnings, ['self-signed certificate: not trusted by PDF readers']);
  });

  test('a certificate that expires within 30 days is accepted with a warning', async () => {
    const seal = await check(sealP12('soon', { to: 10 }));
    assert.equal(seal.warnings.length, 1);
    assert.match(seal.warnings[0], /^the sealing certificate expires on \d{4}-\d\d-\d\d \(in (9|10) days\): renew it$/);
  });
});

/** `signet <command>` on a PGlite DATA_DIR of its own; resolves at "listening"/"started", or when it exits. */
async function start(command: 'serve' | 'worker', extra: Record<string, string>) {
  const dataDir = mkdtempSync(path.join(tmp, 'data-'));
  await seedPgliteDataDir(dataDir);
  // PGlite in DATA_DIR whatever the suite's store: a real process must not write into the shared PostgreSQL's public schema.
  const { DATABASE_URL: _url, NODE_TEST_CONTEXT: _ctx, ...env } = process.env;
  const proc = spawn(process.execPath, [...RUN_TS, 'src/cli.ts', command], {
    cwd: ROOT,
    env: { ...env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', OPS_TOKEN, JWT_SECRET: 'j'.repeat(64), LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_MS: '0', ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  createInterface({ input: proc.stderr! }).on('line', (l) => stderr.push(l));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const port = await new Promise<number | undefined>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} neither started nor exited:\n${stdout.join('\n')}\n${stderr.join('\n')}`)), 90_000);
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      stdout.push(line);
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)|worker \S+ started/.exec(line);
      if (m) (clearTimeout(timer), resolve(m[1] ? Number(m[1]) : 0));
    });
    void exited.then(() => (clearTimeout(timer), resolve(undefined)));
  });
  const stop = async () => {
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await exited;
  };
  return { port, stdout, stderr, exited, stop };
}

describe('`signet serve` and `signet worker`', () => {
  test('refuse a bad P12 with one line on stderr and exit 1: wrong passphrase, missing intermediate, expired', async () => {
    const cases: [string, Record<string, string>, RegExp][] = [
      ['serve', { SIGNING_CERT_P12_PATH: good, SIGNING_CERT_PASSPHRASE: 'wrong' }, /^Invalid configuration: SIGNING_CERT_PASSPHRASE: does not open /],
      ['worker', { SIGNING_CERT_P12_PATH: sealP12('cli-missing', {}, (leaf) => [leaf.cert, ca.root.cert]), SIGNING_CERT_PASSPHRASE: PASS }, /^Invalid configuration: SIGNING_CERT_P12_PATH: .* does not hold the certificate of CN=Test Intermediate CA/],
      ['serve', { SIGNING_CERT_P12_PATH: sealP12('cli-expired', { from: -30, to: -1 }), SIGNING_CERT_PASSPHRASE: PASS }, /^Invalid configuration: SIGNING_CERT_P12_PATH: the certificate CN=Seal cli-expired .* expired on /],
    ];
    for (const [command, env, pattern] of cases) {
      const p = await start(command as 'serve' | 'worker', env);
      try {
        assert.equal(p.port, undefined, `${command} started: ${p.stdout.join('\n')}`);
        assert.equal(await p.exited, 1);
        assert.equal(p.stderr.length, 1, p.stderr.join('\n'));
        assert.match(p.stderr[0], pattern);
      } finally {
        await p.stop();
      }
    }
  });

  test('the development seal: one warning at start, and /health says so', async () => {
    const p = await start('serve', {});
    try {
      assert.ok(p.port, p.stderr.join('\n'));
      const warnings = p.stdout.filter((l) => l.includes('development seal'));
      assert.equal(warnings.length, 1, p.stdout.join('\n'));
      assert.equal(JSON.parse(warnings[0]).msg, 'sealing certificate: development seal: not trusted by PDF readers: set SIGNING_CERT_P12_PATH to a CA-issued certificate (docs/operating.md: The sealing certificate)');
      const health = await (await fetch(`http://127.0.0.1:${p.port}/health`)).json();
      assert.equal(health.seal.certificate, 'development');
      assert.equal(health.seal.warning, 'development seal: not trusted by PDF readers');
    } finally {
      await p.stop();
    }
  });

  test("docs/operating.md's OpenSSL recipe makes a P12 that serve starts with", async () => {
    const readme = readFileSync(path.join(ROOT, 'docs', 'operating.md'), 'utf8');
    const block = /<!-- test: test\/seal-certificate\.test\.ts runs this block -->\n```sh\n([\s\S]*?)```/.exec(readme);
    assert.ok(block, 'the recipe is in docs/operating.md');
    const dir = path.join(tmp, 'recipe');
    mkdirSync(dir);
    await run('sh', ['-e', '-c', block[1]], { cwd: dir });
    const passphrase = /-passout pass:(\S+)/.exec(block[1])![1];
    const p = await start('serve', { SIGNING_CERT_P12_PATH: path.join(dir, 'seal.p12'), SIGNING_CERT_PASSPHRASE: passphrase, LOG_LEVEL: 'warn' });
    try {
      assert.ok(p.port, p.stderr.join('\n'));
      assert.deepEqual(p.stdout.filter((l) => l.includes('sealing certificate')), []);
      const health = await (await fetch(`http://127.0.0.1:${p.port}/health`)).json();
      assert.deepEqual({ ...health.seal, notAfter: undefined }, { certificate: 'configured', subject: 'CN=Example Corp document seal, O=Example Corp', notAfter: undefined });
    } finally {
      await p.stop();
    }
    // docs/operating.md's export line, as an operator runs it: the same P12, its passphrase typed in.
    await run('sh', ['-e', '-c', 'openssl pkcs12 -export -inkey key.pem -in cert.pem -certfile chain.pem -passout pass:again -out again.p12'], { cwd: dir });
    assert.equal((await check(path.join(dir, 'again.p12'), 'again')).subject, 'CN=Example Corp document seal, O=Example Corp');
  });
});
