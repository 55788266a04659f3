// test-lane: once (the runtime and the `signet` launcher; opens no database)
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, test } from 'node:test';
import { nodeMajor, projectRuntime } from './fixtures/runtime.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const runtime = projectRuntime();
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

test('the project installs Node.js 24 for this platform, and the tests run on it', { skip: !runtime && `no node-${process.platform}-${process.arch} package on the registry` }, () => {
  assert.match(pkg.optionalDependencies[runtime!.pkg], /^\^24\./, 'the runtime package is pinned to the 24 line');
  assert.equal(nodeMajor(runtime!.version), 24);
  assert.equal(nodeMajor(process.version), 24, `the tests run on ${process.execPath} (${process.version}), not the project's runtime: run them with npm test`);
});

/** A `node` on PATH older than 22.12, as the system Node.js of these machines (20.20), if there is one. */
function olderNode(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir || dir.includes('node_modules')) continue;
    try {
      const bin = path.join(dir, 'node');
      const [major, minor] = execFileSync(bin, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim().split('.').map(Number);
      if (major < 22 || (major === 22 && minor < 12)) return bin;
    } catch {
      // not there, or not a node
    }
  }
  return undefined;
}

const older = olderNode();

describe('`signet` under an older Node.js', { skip: !older && 'no Node.js older than 22.12 on PATH to start it with' }, () => {
  // The launcher in a package of its own whose dist/cli.js reports the runtime it was given and its arguments,
  // and waits for a signal on `wait` (no build needed). node_modules is the project's, for the runtime package.
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-launcher-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'bin'));
  mkdirSync(path.join(dir, 'dist'));
  copyFileSync(path.join(ROOT, 'bin', 'signet.js'), path.join(dir, 'bin', 'signet.js'));
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
  writeFileSync(
    path.join(dir, 'dist', 'cli.js'),
    `const args = process.argv.slice(2);
// The handler before the line that tells the test to send the signal.
if (args[0] === 'wait') {
  process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(7); });
  setInterval(() => {}, 1000);
} else process.exitCode = Number(args[1] ?? 0);
console.log(JSON.stringify({ version: process.version, args }));
`,
  );
  const launch = (args: string[]) => spawn(older!, [path.join(dir, 'bin', 'signet.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = (child: ReturnType<typeof launch>) => createInterface({ input: child.stdout! });
  const exit = (child: ReturnType<typeof launch>) => new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  test('without the runtime package it refuses, naming the version it needs', async () => {
    const child = launch(['serve']);
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    assert.equal(await exit(child), 1);
    assert.match(stderr, /Node\.js 22\.12 or newer is needed, and this is v\d+/);
  });

  test('with it, the command runs on Node.js 24 with its arguments, and its exit code comes back', { skip: !runtime && 'no runtime package for this platform' }, async () => {
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    const child = launch(['ops', '3']);
    const [first, code] = await Promise.all([new Promise<string>((resolve) => lines(child).once('line', resolve)), exit(child)]);
    const reported = JSON.parse(first);
    assert.equal(nodeMajor(reported.version), 24);
    assert.deepEqual(reported.args, ['ops', '3']);
    assert.equal(code, 3);
  });

  test('a SIGTERM sent to the command reaches the server it started, which stops as it chooses', { skip: !runtime && 'no runtime package for this platform' }, async () => {
    const child = launch(['wait']);
    const exited = exit(child);
    const out = lines(child);
    const seen: string[] = [];
    await new Promise<void>((resolve) => out.on('line', (line) => (seen.push(line), line.startsWith('{') && resolve())));
    child.kill('SIGTERM');
    assert.equal(await exited, 7);
    assert.ok(seen.includes('got SIGTERM'), seen.join('\n'));
  });
});
