// test-lane: once (opens no database)
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { simpleParser } from 'mailparser';
import { createEmailProvider, createOutboxEmail, createSmtpEmail, EmailDeliveryError, type EmailMessage } from '../src/providers/email/index.js';
import { createLocalStorage, InvalidBlobKeyError } from '../src/providers/storage/index.js';
import { startSmtpServer, type TestSmtpServer } from './fixtures/smtp.js';

let tmp: string;
before(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'signet-providers-'));
});
after(() => rmSync(tmp, { recursive: true, force: true }));

let dirs = 0;
const freshDir = (name: string) => path.join(tmp, `${name}-${++dirs}`);

/** Every file under dir, as paths relative to it. */
const listFiles = (dir: string): string[] => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));

/** A small PDF with binary bytes in it, so a lossy encoding (7bit, latin1) would be caught. */
const samplePdf = () => Buffer.concat([Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1'), randomBytes(4096), Buffer.from('\n%%EOF\n')]);

describe('local blob storage', () => {
  test('put, get, getStream, overwrite and delete round-trip the exact bytes', async () => {
    const root = freshDir('blobs');
    const storage = createLocalStorage(root);
    const first = randomBytes(100_000);
    const second = randomBytes(10);

    await storage.put('envelopes/e1/original.pdf', first);
    assert.deepEqual(Buffer.from((await storage.get('envelopes/e1/original.pdf'))!), first);
    // The key is the path under the root, subdirectories created on demand.
    assert.deepEqual(readFileSync(path.join(root, 'envelopes', 'e1', 'original.pdf')), first);

    const read = await storage.getStream('envelopes/e1/original.pdf');
    assert.ok(read);
    assert.equal(read.size, first.length);
    const chunks: Buffer[] = [];
    for await (const chunk of read.stream) chunks.push(chunk as Buffer);
    assert.deepEqual(Buffer.concat(chunks), first);

    await storage.put('envelopes/e1/original.pdf', second);
    assert.deepEqual(Buffer.from((await storage.get('envelopes/e1/original.pdf'))!), second);

    await storage.delete('envelopes/e1/original.pdf');
    assert.equal(await storage.get('envelopes/e1/original.pdf'), undefined);
    assert.deepEqual(listFiles(root), []);
  });

  test('a missing key reads as undefined and deleting it is not an error', async () => {
    const storage = createLocalStorage(freshDir('blobs'));
    assert.equal(await storage.get('nope/never.pdf'), undefined);
    assert.equal(await storage.getStream('nope/never.pdf'), undefined);
    await storage.delete('nope/never.pdf');
    await storage.put('dir/file', new Uint8Array([1]));
    // 'dir' is a directory, not a blob.
    assert.equal(await storage.get('dir'), undefined);
    assert.equal(await storage.getStream('dir'), undefined);
    await storage.delete('dir');
    assert.deepEqual(Buffer.from((await storage.get('dir/file'))!), Buffer.from([1]));
  });

  test('concurrent readers never see a partial write, and no temporary file is left behind', async () => {
    const root = freshDir('blobs');
    const storage = createLocalStorage(root);
    const size = 2 * 1024 * 1024;
    const values = Array.from({ length: 12 }, (_, i) => Buffer.alloc(size, i + 1));
    let writing = true;
    let reads = 0;

    const reader = async () => {
      while (writing) {
        const got = await storage.get('doc/signed.pdf');
        if (got === undefined) continue;
        reads++;
        // Each value is one repeated byte: a torn or truncated read shows up as a short or mixed buffer.
        assert.equal(got.byteLength, size, 'a reader saw a partially written blob');
        assert.ok(got.every((b) => b === got[0]), 'a reader saw a mix of two writes');
      }
    };
    const readers = [reader(), reader()];
    await Promise.all(values.map((v) => storage.put('doc/signed.pdf', v)));
    writing = false;
    await Promise.all(readers);

    const final = (await storage.get('doc/signed.pdf'))!;
    assert.ok(values.some((v) => v.equals(final)), 'the final blob is one of the written values');
    assert.ok(reads > 0, 'the readers actually read during the writes');
    assert.deepEqual(listFiles(root), [path.join('doc', 'signed.pdf')], 'only the blob remains: no temporary files');
  });

  test('a failed put leaves no temporary file', async () => {
    const root = freshDir('blobs');
    const storage = createLocalStorage(root);
    await storage.put('a', new Uint8Array([1]));
    // 'a' is a file, so 'a/b' cannot be created under it.
    await assert.rejects(storage.put('a/b', new Uint8Array([2])), (err: NodeJS.ErrnoException) => ['ENOTDIR', 'EEXIST'].includes(err.code ?? ''));
    assert.deepEqual(listFiles(root), ['a']);
  });

  test('keys that could escape the root or are not plain paths are refused by every method', async () => {
    const parent = freshDir('outer');
    const root = path.join(parent, 'blobs');
    const storage = createLocalStorage(root);
    await storage.put('inside.txt', new Uint8Array([1]));
    writeFileSync(path.join(parent, 'outside.txt'), 'untouched');

    const bad = [
      '',
      '../outside.txt',
      'a/../../outside.txt',
      '..',
      '/etc/passwd',
      'a//b',
      'a/',
      'a/./b',
      '.hidden',
      'a/.tmp-x',
      'a\\..\\b',
      'a b',
      'über.pdf',
      'a%2f..',
      'x\0y',
      'k'.repeat(1025),
    ];
    for (const key of bad) {
      const refused = (err: unknown) => err instanceof InvalidBlobKeyError;
      await assert.rejects(storage.put(key, new Uint8Array([9])), refused, `put ${JSON.stringify(key)}`);
      await assert.rejects(storage.get(key), refused, `get ${JSON.stringify(key)}`);
      await assert.rejects(storage.getStream(key), refused, `getStream ${JSON.stringify(key)}`);
      await assert.rejects(storage.delete(key), refused, `delete ${JSON.stringify(key)}`);
    }
    assert.equal(readFileSync(path.join(parent, 'outside.txt'), 'utf8'), 'untouched');
    assert.deepEqual(listFiles(root), ['inside.txt']);

    for (const key of ['a', 'A-Z_0.9/x.pdf', 'envelopes/0190a1b2-c3d4/signed.pdf', 'k'.repeat(200)]) {
      await storage.put(key, new Uint8Array([7]));
      assert.deepEqual(Buffer.from((await storage.get(key))!), Buffer.from([7]), key);
    }
  });
});

const FROM = 'Signet <no-reply@signet.test>';

function invitation(pdf: Buffer): EmailMessage {
  return {
    to: 'Alice Example <alice@example.com>',
    subject: 'Bitte unterschreiben: Vertrag Ä-42',
    text: 'Please sign: https://sign.example/abc\nThanks.',
    html: '<p>Please sign: <a href="https://sign.example/abc">open</a></p>',
    attachments: [{ filename: 'contract.pdf', content: new Uint8Array(pdf), contentType: 'application/pdf' }],
    headers: { 'X-Signet-Envelope': 'env_123' },
  };
}

describe('outbox email', () => {
  test('each message becomes one RFC 5322 .eml file that parses back to what was sent', async () => {
    const dir = freshDir('outbox');
    const email = createOutboxEmail(dir, FROM);
    const pdf = samplePdf();

    const sent = await email.send(invitation(pdf));
    const files = readdirSync(dir);
    assert.equal(files.length, 1);
    assert.match(files[0], /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z-[0-9a-f]{12}\.eml$/);

    const raw = readFileSync(path.join(dir, files[0]));
    assert.ok(!/[^\r]\n/.test(raw.toString('latin1')), 'every line ends with CRLF');
    const mail = await simpleParser(raw);
    assert.equal(mail.messageId, sent.messageId);
    assert.deepEqual(mail.from && mail.from.value.map((a) => [a.name, a.address]), [['Signet', 'no-reply@signet.test']]);
    assert.deepEqual(mail.to && !Array.isArray(mail.to) && mail.to.value.map((a) => [a.name, a.address]), [['Alice Example', 'alice@example.com']]);
    assert.equal(mail.subject, 'Bitte unterschreiben: Vertrag Ä-42');
    assert.equal(mail.text?.trim(), 'Please sign: https://sign.example/abc\nThanks.');
    assert.match(String(mail.html), /href="https:\/\/sign\.example\/abc"/);
    assert.equal(mail.headers.get('x-signet-envelope'), 'env_123');
    assert.ok(mail.date instanceof Date);
    assert.equal(mail.attachments.length, 1);
    assert.equal(mail.attachments[0].filename, 'contract.pdf');
    assert.equal(mail.attachments[0].contentType, 'application/pdf');
    assert.ok(mail.attachments[0].content.equals(pdf), 'attachment bytes intact');
    await email.close();
  });

  test('messages get distinct files, a given Message-ID is kept, and no temporary file remains', async () => {
    const dir = freshDir('outbox');
    const email = createOutboxEmail(dir, FROM);
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) => email.send({ to: `r${i}@example.com`, subject: `s${i}`, text: `t${i}`, ...(i === 0 && { messageId: '<stable-1@signet.test>' }) })),
    );
    assert.equal(results[0].messageId, '<stable-1@signet.test>');
    assert.equal(new Set(results.map((r) => r.messageId)).size, 5);

    const files = readdirSync(dir);
    assert.equal(files.length, 5);
    assert.ok(files.every((f) => f.endsWith('.eml')), `only .eml files: ${files.join(', ')}`);
    const subjects = await Promise.all(files.map(async (f) => (await simpleParser(readFileSync(path.join(dir, f)))).subject));
    assert.deepEqual(subjects.sort(), ['s0', 's1', 's2', 's3', 's4']);
    await email.close();
  });
});

describe('SMTP email', () => {
  let smtp: TestSmtpServer;
  before(async () => {
    smtp = await startSmtpServer({
      rejectRecipient: (a) => (a.startsWith('bounce@') ? 'permanent' : a.startsWith('later@') ? 'transient' : undefined),
    });
  });
  after(() => smtp.close());

  test('delivers to, from, subject, text and a PDF attachment with its bytes intact', async () => {
    const email = createSmtpEmail(smtp.url, FROM);
    const pdf = samplePdf();
    try {
      const sent = await email.send(invitation(pdf));
      const mail = await smtp.waitFor((m) => m.messageId === sent.messageId, 5_000);
      const index = smtp.messages.indexOf(mail);
      assert.deepEqual(smtp.envelopes[index], { from: 'no-reply@signet.test', to: ['alice@example.com'] });
      assert.deepEqual(mail.from && mail.from.value.map((a) => [a.name, a.address]), [['Signet', 'no-reply@signet.test']]);
      assert.deepEqual(mail.to && !Array.isArray(mail.to) && mail.to.value.map((a) => [a.name, a.address]), [['Alice Example', 'alice@example.com']]);
      assert.equal(mail.subject, 'Bitte unterschreiben: Vertrag Ä-42');
      assert.equal(mail.text?.trim(), 'Please sign: https://sign.example/abc\nThanks.');
      assert.equal(mail.headers.get('x-signet-envelope'), 'env_123');
      assert.equal(mail.attachments.length, 1);
      assert.equal(mail.attachments[0].filename, 'contract.pdf');
      assert.equal(mail.attachments[0].contentType, 'application/pdf');
      assert.ok(mail.attachments[0].content.equals(pdf), 'attachment bytes intact');
    } finally {
      await email.close();
    }
  });

  test('the pool delivers a burst of concurrent messages', async () => {
    const email = createSmtpEmail(smtp.url, FROM);
    try {
      const tag = randomBytes(4).toString('hex');
      const sent = await Promise.all(Array.from({ length: 8 }, (_, i) => email.send({ to: `r${i}@example.com`, subject: `burst ${tag} ${i}`, text: 'x' })));
      for (const s of sent) await smtp.waitFor((m) => m.messageId === s.messageId, 5_000);
      assert.equal(smtp.messages.filter((m) => m.subject?.startsWith(`burst ${tag} `)).length, 8);
    } finally {
      await email.close();
    }
  });

  test('a refused recipient is an EmailDeliveryError, permanent for 5xx and transient for 4xx', async () => {
    const email = createSmtpEmail(smtp.url, FROM);
    try {
      await assert.rejects(email.send({ to: 'bounce@example.com', subject: 's', text: 't' }), (err: unknown) => {
        assert.ok(err instanceof EmailDeliveryError, String(err));
        assert.equal(err.permanent, true);
        assert.equal(err.responseCode, 550);
        return true;
      });
      await assert.rejects(email.send({ to: 'later@example.com', subject: 's', text: 't' }), (err: unknown) => {
        assert.ok(err instanceof EmailDeliveryError, String(err));
        assert.equal(err.permanent, false);
        assert.equal(err.responseCode, 450);
        return true;
      });
    } finally {
      await email.close();
    }
  });

  test('an unreachable server is a transient EmailDeliveryError that does not echo the credentials', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const email = createSmtpEmail(`smtp://user:s3cret-pass@127.0.0.1:${port}`, FROM);
    try {
      await assert.rejects(email.send({ to: 'a@example.com', subject: 's', text: 't' }), (err: unknown) => {
        assert.ok(err instanceof EmailDeliveryError, String(err));
        assert.equal(err.permanent, false);
        assert.ok(!err.message.includes('s3cret-pass'), err.message);
        return true;
      });
    } finally {
      await email.close();
    }
  });

  test('createEmailProvider picks SMTP when smtpUrl is set, else the outbox', async () => {
    const outboxDir = freshDir('outbox');
    const viaSmtp = createEmailProvider({ smtpUrl: smtp.url, from: FROM, outboxDir });
    const viaOutbox = createEmailProvider({ from: FROM, outboxDir });
    try {
      const a = await viaSmtp.send({ to: 'smtp@example.com', subject: 'factory smtp', text: 't' });
      await smtp.waitFor((m) => m.messageId === a.messageId, 5_000);
      assert.deepEqual(listFilesIfAny(outboxDir), [], 'SMTP mail is not also written to the outbox');

      const before = smtp.messages.length;
      const b = await viaOutbox.send({ to: 'outbox@example.com', subject: 'factory outbox', text: 't' });
      const files = listFilesIfAny(outboxDir);
      assert.equal(files.length, 1);
      assert.equal((await simpleParser(readFileSync(path.join(outboxDir, files[0])))).messageId, b.messageId);
      assert.equal(smtp.messages.length, before, 'outbox mail does not reach the SMTP server');
    } finally {
      await viaSmtp.close();
      await viaOutbox.close();
    }
  });
});

function listFilesIfAny(dir: string): string[] {
  try {
    return listFiles(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
