import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { turnBufferedDestination } from '../src/lib/log-destination.js';

/** A descriptor stand-in: what each write(2) got, optionally failing or writing part of it first. */
function recorder(answers: ((bytes: Uint8Array) => number)[] = []) {
  const writes: string[] = [];
  const writeSync = (_fd: number, bytes: Uint8Array) => {
    const answer = answers.shift();
    const n = answer ? answer(bytes) : bytes.length;
    writes.push(Buffer.from(bytes.subarray(0, n)).toString());
    return n;
  };
  return { writes, writeSync };
}

test('the lines of one turn go out in one write, at the end of that turn', async () => {
  const fd = recorder();
  const log = pino({ base: null, timestamp: false }, turnBufferedDestination(99, fd.writeSync));
  log.info('one');
  log.info('two');
  log.info({ n: 3 }, 'three');
  assert.equal(fd.writes.length, 0, 'nothing written while the turn runs');
  await nextTurn();
  assert.equal(fd.writes.length, 1);
  assert.deepEqual(
    fd.writes[0].trimEnd().split('\n').map((l: string) => JSON.parse(l).msg),
    ['one', 'two', 'three'],
  );
  log.info('later');
  await nextTurn();
  assert.equal(fd.writes.length, 2);
  assert.equal(JSON.parse(fd.writes[1]).msg, 'later');
  await nextTurn();
  assert.equal(fd.writes.length, 2, 'no empty write when nothing was logged');
});

test('a partial write, a full pipe (EAGAIN) and a reader gone (EPIPE)', async () => {
  const eagain = () => {
    throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
  };
  const fd = recorder([() => 3, eagain]);
  const dest = turnBufferedDestination(99, fd.writeSync);
  dest.write('héllo\n');
  dest.write('world\n');
  await nextTurn();
  // 3 bytes went out ("hé" is 3 bytes), then the pipe was full: the rest waits for a retry.
  assert.deepEqual(fd.writes, ['hé']);
  await sleep(50);
  assert.deepEqual(fd.writes, ['hé', 'llo\nworld\n']);

  const gone = recorder([
    () => {
      throw Object.assign(new Error('EPIPE'), { code: 'EPIPE' });
    },
  ]);
  const closed = turnBufferedDestination(99, gone.writeSync);
  closed.write('lost\n');
  await nextTurn();
  closed.write('dropped\n');
  await nextTurn();
  assert.equal(gone.writes.length, 0, 'after EPIPE nothing more is written, and nothing throws');

  // Any other write error (EBADF, EIO) stops logging the same way: a log line never ends the process.
  const broken = recorder([
    () => {
      throw Object.assign(new Error('EBADF'), { code: 'EBADF' });
    },
  ]);
  const bad = turnBufferedDestination(99, broken.writeSync);
  bad.write('lost\n');
  await nextTurn();
  bad.write('dropped\n');
  await nextTurn();
  assert.equal(broken.writes.length, 0, 'after EBADF nothing more is written, and nothing throws');
});

test('flush writes what is pending at once (as at exit)', () => {
  const fd = recorder();
  const dest = turnBufferedDestination(99, fd.writeSync);
  dest.write('last words\n');
  dest.flush();
  assert.deepEqual(fd.writes, ['last words\n']);
});
