// test-lane: once (opens no database)
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AppError } from '../src/errors.js';
import { checkResolvable, isPublicUnicast, parseWebhookUrl, systemResolver, type Resolver } from '../src/providers/webhooks/url-policy.js';

const OWN = ['https://signet.example.com', 'https://sign.example.com', 'https://app.example.com'];
const policy = { allowHosts: [] as string[], ownOrigins: OWN };

/** A DNS that answers from a table; names not in it fail like the system resolver does. */
function fakeDns(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = async (host: string) => {
    calls.push(host);
    const answers = table[host];
    if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return answers.map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));
  };
  return Object.assign(resolver, { calls });
}

function assertRefused(fn: () => unknown, pattern?: RegExp) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.code, 'INVALID_WEBHOOK_URL');
    assert.equal(err.status, 400);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

async function assertRefusedAsync(p: Promise<unknown>, pattern?: RegExp) {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.code, 'INVALID_WEBHOOK_URL');
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

describe('isPublicUnicast', () => {
  const notPublic = [
    '127.0.0.1', '127.255.255.254', '0.0.0.0', '0.1.2.3', '10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.255',
    '192.168.1.1', '100.64.0.1', '100.127.255.255', '169.254.169.254', '169.254.0.1', '224.0.0.1', '239.255.255.250',
    '255.255.255.255', '240.0.0.1', '198.18.0.1', '198.19.255.255', '192.0.2.1', '198.51.100.7', '203.0.113.9',
    '192.0.0.8', '192.88.99.1',
    '::1', '::', 'fe80::1', 'fe80::1%eth0', 'febf::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', 'ff0e::1', 'fec0::1',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:8.8.8.8', '::ffff:a9fe:a9fe', '::127.0.0.1', '::7f00:1', '::8.8.8.8',
    '::ffff:0:7f00:1', '64:ff9b::a9fe:a9fe', '64:ff9b::8.8.8.8', '64:ff9b:1::a00:1', '2002:7f00:1::1', '2002:808:808::1',
    '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '100::1', '2001:db8::1', '2001:2::1', '3fff::1',
    '[::1]', 'not-an-ip', '', '1.2.3', '999.1.1.1',
  ];
  for (const a of notPublic) test(`refuses ${JSON.stringify(a)}`, () => assert.equal(isPublicUnicast(a), false));

  const publicOnes = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.15.255.255', '172.32.0.1', '100.63.255.255', '100.128.0.1',
    '169.253.255.255', '198.17.255.255', '198.20.0.1', '223.255.255.255', '11.0.0.1', '2606:4700:4700::1111',
    '2001:4860:4860::8888', '2a00:1450:4001:80b::200e', '2001:200::1', '[2606:4700::1]'];
  for (const a of publicOnes) test(`accepts ${a}`, () => assert.equal(isPublicUnicast(a), true));
});

describe('parseWebhookUrl', () => {
  test('the WHATWG parser turns decimal, hex and octal IPv4 spellings into dotted form', () => {
    // If this ever stops holding, the literal checks below would see the raw spelling: fail loudly.
    for (const raw of ['http://2130706433/', 'http://0x7f000001/', 'http://0177.0.0.1/', 'http://0x7f.1/', 'http://127.1/', 'http://%31%32%37.0.0.1/']) {
      assert.equal(new URL(raw).hostname, '127.0.0.1', raw);
    }
    assert.equal(new URL('http://[::ffff:127.0.0.1]/').hostname, '[::ffff:7f00:1]');
  });

  const refused: [string, RegExp][] = [
    ['http://2130706433/', /not a public address/],
    ['http://0x7f000001/', /not a public address/],
    ['http://0177.0.0.1/', /not a public address/],
    ['http://0x7f.1/', /not a public address/],
    ['http://127.0.0.1:8080/hook', /not a public address/],
    ['http://[::1]/', /not a public address/],
    ['http://[::ffff:127.0.0.1]/', /not a public address/],
    ['http://[::ffff:7f00:1]/', /not a public address/],
    ['http://[0:0:0:0:0:ffff:169.254.169.254]/', /not a public address/],
    ['http://[::127.0.0.1]/', /not a public address/],
    ['http://[64:ff9b::a9fe:a9fe]/', /not a public address/],
    ['http://[64:ff9b:1::a9fe:a9fe]/', /not a public address/],
    ['http://[2002:a9fe:a9fe::1]/', /not a public address/],
    ['http://[2001:0:4136:e378::1]/', /not a public address/],
    ['http://169.254.169.254/latest/meta-data', /not a public address/],
    ['http://2852039166/latest/meta-data', /not a public address/], // 169.254.169.254 as a decimal
    ['http://[fe80::1]/', /not a public address/],
    ['http://[fc00::1]/', /not a public address/],
    ['http://[fd00:ec2::254]/', /not a public address/],
    ['http://[ff02::1]/', /not a public address/],
    ['http://100.64.0.1/', /not a public address/],
    ['http://10.0.0.1/', /not a public address/],
    ['http://172.16.5.4/', /not a public address/],
    ['http://192.168.0.1/', /not a public address/],
    ['http://0.0.0.0/', /not a public address/],
    ['http://0/', /not a public address/],
    ['http://[::]/', /not a public address/],
    ['http://255.255.255.255/', /not a public address/],
    ['http://224.0.0.1/', /not a public address/],
    ['http://198.18.0.1/', /not a public address/],
    ['http://192.0.2.1/', /not a public address/],
    ['http://u:p@example.com/', /credentials/],
    ['https://user@example.com/', /credentials/],
    ['ftp://example.com/hook', /http or https/],
    ['file:///etc/passwd', /http or https/],
    ['javascript:alert(1)', /http or https/],
    ['gopher://example.com:70/', /http or https/],
    ['not a url', /not a valid absolute URL/],
    ['/relative/path', /not a valid absolute URL/],
    ['', /empty/],
    [`https://example.com/${'a'.repeat(2100)}`, /longer than/],
    ['http://localhost/', /local-network name/],
    ['http://LOCALHOST:3000/', /local-network name/],
    ['http://localhost./', /local-network name/],
    ['http://api.localhost/', /local-network name/],
    ['http://printer.local/', /local-network name/],
    ['http://metadata.google.internal/computeMetadata/v1/', /local-network name/],
    ['http://router.home.arpa/', /local-network name/],
    ['http://intranet/', /local-network name/],
    ['https://signet.example.com/v1/webhooks', /own origin/],
    ['https://SIGNET.example.com./anything', /own origin/],
    ['https://signet.example.com:443/x', /own origin/],
    ['http://signet.example.com:443/x', /own origin/],
    ['https://sign.example.com/sign/abc', /own origin/],
    ['https://app.example.com/', /own origin/],
  ];
  for (const [raw, pattern] of refused) {
    test(`refuses ${raw.length > 80 ? `${raw.slice(0, 40)}…` : JSON.stringify(raw)}`, () => assertRefused(() => parseWebhookUrl(raw, policy), pattern));
  }

  test('accepts public hosts and reports IP literals', () => {
    const named = parseWebhookUrl('https://hooks.example.com/esign?x=1', policy);
    assert.equal(named.url.href, 'https://hooks.example.com/esign?x=1');
    assert.equal(named.literalAddress, undefined);
    assert.equal(parseWebhookUrl('http://93.184.216.34:8080/h', policy).literalAddress, '93.184.216.34');
    assert.equal(parseWebhookUrl('https://[2606:4700:4700::1111]/h', policy).literalAddress, '2606:4700:4700::1111');
    // Same host as the service on another port is another origin (another process).
    assert.ok(parseWebhookUrl('https://signet.example.com:8443/h', policy).url);
    assert.ok(parseWebhookUrl('https://other.example.com/h', policy).url);
  });

  test('allowHosts exempts the named hosts (case-insensitive) from the name and address checks, nothing else', () => {
    const dev = { allowHosts: ['LocalHost', '127.0.0.1', '[::1]', 'hooks.internal'], ownOrigins: ['http://localhost:3000'] };
    assert.equal(parseWebhookUrl('http://localhost:4000/hook', dev).url.hostname, 'localhost');
    assert.equal(parseWebhookUrl('http://127.0.0.1:4000/hook', dev).literalAddress, '127.0.0.1');
    assert.equal(parseWebhookUrl('http://2130706433:4000/hook', dev).literalAddress, '127.0.0.1');
    assert.equal(parseWebhookUrl('http://[::1]:4000/hook', dev).literalAddress, '::1');
    assert.ok(parseWebhookUrl('http://HOOKS.internal/', dev));
    // Only the exact host: a sub-domain or another loopback address is still refused.
    assertRefused(() => parseWebhookUrl('http://a.localhost/', dev), /local-network/);
    assertRefused(() => parseWebhookUrl('http://127.0.0.2/', dev), /not a public address/);
    // The exemption covers addresses, not the other rules.
    assertRefused(() => parseWebhookUrl('http://localhost:3000/', dev), /own origin/);
    assertRefused(() => parseWebhookUrl('http://u:p@localhost:4000/', dev), /credentials/);
    assertRefused(() => parseWebhookUrl('ftp://localhost/', dev), /http or https/);
  });
});

describe('checkResolvable', () => {
  const dns = fakeDns({
    'private.example.com': ['10.1.2.3'],
    'metadata.example.com': ['169.254.169.254'],
    'mixed.example.com': ['93.184.216.34', '192.168.1.20'],
    'mixed6.example.com': ['2606:4700::1', '::ffff:127.0.0.1'],
    'public.example.com': ['93.184.216.34', '2606:4700::1'],
    'v6.example.com': ['2606:4700::6'],
    'empty.example.com': [],
    'dev.example.com': ['127.0.0.1'],
  });
  const opts = { allowHosts: ['dev.example.com'], resolver: dns };

  test('a name that resolves to a private address is refused', async () => {
    await assertRefusedAsync(checkResolvable(new URL('https://private.example.com/h'), opts), /resolves to 10\.1\.2\.3/);
    await assertRefusedAsync(checkResolvable(new URL('https://metadata.example.com/h'), opts), /169\.254\.169\.254/);
  });

  test('one private address among public ones is enough to refuse', async () => {
    await assertRefusedAsync(checkResolvable(new URL('https://mixed.example.com/h'), opts), /192\.168\.1\.20/);
    await assertRefusedAsync(checkResolvable(new URL('https://mixed6.example.com/h'), opts), /::ffff:127\.0\.0\.1/);
  });

  test('a public name passes and the first answer is the one to dial', async () => {
    assert.deepEqual(await checkResolvable(new URL('https://public.example.com/h'), opts), { address: '93.184.216.34', family: 4 });
    assert.deepEqual(await checkResolvable(new URL('https://v6.example.com/h'), opts), { address: '2606:4700::6', family: 6 });
  });

  test('an allow-listed name is resolved but not checked', async () => {
    assert.deepEqual(await checkResolvable(new URL('http://dev.example.com:4000/'), opts), { address: '127.0.0.1', family: 4 });
  });

  test('an IP literal is not resolved, only checked', async () => {
    const before = dns.calls.length;
    assert.deepEqual(await checkResolvable(new URL('https://[2606:4700::1]/'), opts), { address: '2606:4700::1', family: 6 });
    await assertRefusedAsync(checkResolvable(new URL('http://0x7f.1/'), opts), /not a public address/);
    assert.equal(dns.calls.length, before);
  });

  test('a name that does not resolve, or resolves to nothing, or too slowly, is refused', async () => {
    await assertRefusedAsync(checkResolvable(new URL('https://nowhere.example.com/'), opts), /could not be resolved \(ENOTFOUND\)/);
    await assertRefusedAsync(checkResolvable(new URL('https://empty.example.com/'), opts), /does not resolve/);
    const hang: Resolver = () => new Promise(() => {});
    await assertRefusedAsync(checkResolvable(new URL('https://slow.example.com/'), { allowHosts: [], resolver: hang, timeoutMs: 50 }), /longer than 50 ms/);
  });

  test('the system resolver answers in the Resolver shape', async () => {
    const answers = await systemResolver('localhost');
    assert.ok(answers.length > 0);
    for (const a of answers) {
      assert.ok(a.family === 4 || a.family === 6);
      assert.equal(isPublicUnicast(a.address), false, a.address);
    }
    // And through checkResolvable, localhost's loopback answers are refused when it is not allow-listed.
    await assertRefusedAsync(checkResolvable(new URL('http://localhost/'), { allowHosts: [] }), /not a public address/);
  });
});
