// test-lane: once (reads test files; opens no database)
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { filesForLane, onceReason, runOrder, testFiles, TEST_ROOT, usesDatabase } from './lanes.js';

const repo = path.dirname(TEST_ROOT);
const read = (f: string) => readFileSync(path.join(repo, f), 'utf8');

test('npm test on PGlite runs every test file but the cluster test', () => {
  const all = testFiles();
  assert.deepEqual(filesForLane('pglite'), all);
  assert.ok(all.includes('test/lanes.test.ts') && all.includes('test/e2e/signing.e2e.test.ts'));
  assert.ok(!all.some((f) => f.includes('cluster')));
});

test('on PostgreSQL it runs every file that is not marked, and every file that opens a database is either run or says why not', () => {
  const pg = new Set(filesForLane('postgres'));
  for (const f of testFiles()) {
    const reason = onceReason(read(f), f);
    assert.equal(pg.has(f), reason === undefined, f);
    if (reason && usesDatabase(read(f))) assert.match(reason, /\w+ \w+/, `${f} opens a database: its marker says why once is enough`);
  }
  assert.ok(pg.has('test/jobs.test.ts') && pg.has('test/e2e/x402.e2e.test.ts'));
});

test('a file that behaves differently on PostgreSQL is never marked once', () => {
  const storeSpecific = /process\.env\.DATABASE_URL|onPostgres|kind === 'postgres'/;
  const others = testFiles().filter((f) => f !== 'test/lanes.test.ts');
  const marked = others.filter((f) => onceReason(read(f), f) !== undefined && storeSpecific.test(read(f)));
  assert.deepEqual(marked, []);
});

test('a new file that opens a database runs on both stores unless marked; a malformed marker is refused', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'signet-lanes-'));
  try {
    const dir = path.join(root, 'test');
    mkdirSync(path.join(dir, 'e2e'), { recursive: true });
    writeFileSync(path.join(dir, 'new-module.test.ts'), "import { createTestApp } from './harness.js';\n");
    writeFileSync(path.join(dir, 'e2e', 'page.e2e.test.ts'), '// test-lane: once (pages in Chromium; nothing store-specific)\n');
    writeFileSync(path.join(dir, 'helper.ts'), '');
    assert.deepEqual(filesForLane('pglite', dir), ['test/e2e/page.e2e.test.ts', 'test/new-module.test.ts']);
    assert.deepEqual(filesForLane('postgres', dir), ['test/new-module.test.ts']);
    writeFileSync(path.join(dir, 'new-module.test.ts'), '// test-lane: onec (typo)\n');
    assert.throws(() => filesForLane('postgres', dir), /unknown test lane "onec"/);
    writeFileSync(path.join(dir, 'new-module.test.ts'), '// test-lane: once\n');
    assert.throws(() => filesForLane('postgres', dir), /must say why/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('files that start processes or a browser run first, the rest after, each group in its own order', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'signet-lanes-'));
  try {
    const dir = path.join(root, 'test');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'a.test.ts'), "import { createTestApp } from './harness.js';\n");
    writeFileSync(path.join(dir, 'b.test.ts'), "const page = await launchChromium();\n");
    writeFileSync(path.join(dir, 'c.test.ts'), "spawn(process.execPath, [...RUN_TS, 'src/cli.ts']);\n");
    writeFileSync(path.join(dir, 'd.test.ts'), '');
    assert.deepEqual(runOrder(filesForLane('pglite', dir), dir), ['test/b.test.ts', 'test/c.test.ts', 'test/a.test.ts', 'test/d.test.ts']);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
