import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { openDatabase } from '../src/db/client.js';
import { initPgliteDataDir } from '../src/db/pglite-initdb.js';

// PGlite in DATA_DIR whatever the lane's store: initdb is WASM work, a minute of wall time on a loaded machine.
const timeout = 300_000;

test('a first start creates the PGlite data directory in a child process, then opens and migrates it', { timeout }, async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-initdb-'));
  try {
    const dir = path.join(dataDir, 'pglite');
    await initPgliteDataDir(dir);
    assert.ok(existsSync(path.join(dir, 'PG_VERSION')), 'the child ran initdb');
    const database = await openDatabase({ dataDir });
    try {
      await database.migrate();
      await database.ping();
    } finally {
      await database.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a child that cannot create the directory fails with its reason', { timeout }, async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-initdb-'));
  try {
    writeFileSync(path.join(dataDir, 'file'), '');
    await assert.rejects(initPgliteDataDir(path.join(dataDir, 'file', 'pglite')), /creating the PGlite database in .* failed \(exit 1\): .+/s);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
