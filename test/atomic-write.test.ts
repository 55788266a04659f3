// test-lane: once (files and fsyncs under a temporary directory; no database)
/**
 * Atomic writes into one directory share its fsync (group commit, issue 38), and none is acknowledged
 * before an fsync of the directory that began after its rename. Observed through Node's own FileHandle:
 * its sync is wrapped to tell a directory's fsync from a file's and to hold the first directory fsync
 * until every write has renamed its file into place.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, test } from 'node:test';
import { writeFileAtomic } from '../src/providers/storage/atomic-write.js';

const root = mkdtempSync(path.join(tmpdir(), 'signet-atomic-'));
after(() => rmSync(root, { recursive: true, force: true }));

type SyncProto = { sync(this: FileHandle): Promise<void> };

test('concurrent writes into one directory share its fsync, each acknowledged after an fsync begun after its rename', async () => {
  const dir = path.join(root, 'outbox');
  const names = Array.from({ length: 8 }, (_, i) => `m${i}.eml`);
  const renamed = () => readdirSync(dir).filter((f) => names.includes(f)).length;
  const probe = await open(root, 'r');
  const proto = Object.getPrototypeOf(probe) as SyncProto;
  await probe.close();
  const acknowledged: string[] = [];
  let acknowledgedWhenSecondBegan = -1;
  const original = proto.sync;
  let directorySyncs = 0;
  let renamedWhenFirstBegan = -1;
  proto.sync = async function (this: FileHandle) {
    if ((await this.stat()).isDirectory()) {
      directorySyncs++;
      if (directorySyncs === 1) {
        // Hold the first directory fsync until every write has renamed its file: the later writes came
        // during it, so it cannot count for them.
        while (renamed() < names.length) await sleep(5);
        renamedWhenFirstBegan = names.length;
      }
      if (directorySyncs === 2) acknowledgedWhenSecondBegan = acknowledged.length;
    }
    return original.call(this);
  };
  try {
    await Promise.all(names.map((n) => writeFileAtomic(path.join(dir, n), Buffer.from(n)).then(() => acknowledged.push(n))));
    assert.equal(acknowledged.length, names.length);
    for (const n of names) assert.equal(readFileSync(path.join(dir, n), 'utf8'), n);
    assert.equal(renamedWhenFirstBegan, names.length);
    assert.ok(acknowledgedWhenSecondBegan <= 1, `only the first write may be acknowledged by the first fsync (${acknowledgedWhenSecondBegan} were)`);
    // One fsync that may have begun before most renames, then one that covers them all: not one each.
    assert.equal(directorySyncs, 2, `directory fsyncs: ${directorySyncs} for ${names.length} writes`);
  } finally {
    proto.sync = original;
  }
});

test('a directory removed after a write into it is made again by the next write', async () => {
  const dir = path.join(root, 'blobs', 'a');
  await writeFileAtomic(path.join(dir, 'one.pdf'), Buffer.from('1'));
  rmSync(dir, { recursive: true });
  await writeFileAtomic(path.join(dir, 'two.pdf'), Buffer.from('2'));
  assert.equal(readFileSync(path.join(dir, 'two.pdf'), 'utf8'), '2');
  assert.ok(!existsSync(path.join(dir, 'one.pdf')));
  assert.deepEqual(readdirSync(dir), ['two.pdf'], 'no temporary file is left behind');
});
