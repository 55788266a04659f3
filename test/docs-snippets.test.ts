// test-lane: once (one `signet serve` on its own PGlite directory whatever the suite's store, driven as the docs drive it)
/**
 * Every shell, Node and Python block of README.md and docs/*.md runs against a live `signet serve`, in
 * order, one directory and one set of shell variables per file, and prints what the docs say it prints
 * (test/fixtures/doc-snippets.ts: the blocks, the skip markers and how answers are compared). The
 * README's first envelope is replayed as written: from the first curl to a verified sealed PDF.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { compareAnswer, extractBlocks, markStatement, splitOutput, type Block } from './fixtures/doc-snippets.js';
import { seedPgliteDataDir } from './harness.js';
import { RUN_TS } from './fixtures/run-ts.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const DOCS = (process.env.DOCS_SNIPPETS ? process.env.DOCS_SNIPPETS.split(',') : null) ?? ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const BLOCK_TIMEOUT_MS = 60_000;

let tmp: string;
let dataDir: string;
let port: number;
let receiverPort: number;
let testApiKey: string;
let server: ReturnType<typeof spawn>;
const serverLog: string[] = [];

/** A port nothing listens on now: the webhook receiver the docs start listens there. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port: p } = s.address() as { port: number };
      s.close(() => resolve(p));
    });
  });

before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'signet-docs-'));
  dataDir = path.join(tmp, 'data');
  mkdirSync(dataDir);
  await seedPgliteDataDir(dataDir);
  receiverPort = await freePort();
  const { DATABASE_URL: _url, NODE_TEST_CONTEXT: _ctx, OPS_TOKEN: _ops, ...env } = process.env;
  // As `npm start` runs it, but on port 0; PUBLIC_URL stays the docs' localhost:3000 so answers read as written.
  server = spawn(process.execPath, [...RUN_TS, 'src/cli.ts', 'serve'], {
    cwd: ROOT,
    env: { ...env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', PUBLIC_URL: 'http://localhost:3000', JWT_SECRET: 'j'.repeat(64), LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_MS: '0', WEBHOOK_ALLOW_HOSTS: 'localhost,127.0.0.1', SCHEDULER_INTERVAL_MS: '200' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  createInterface({ input: server.stderr! }).on('line', (l) => serverLog.push(l));
  port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${serverLog.join('\n')}`)), 90_000);
    createInterface({ input: server.stdout! }).on('line', (line) => {
      serverLog.push(line);
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (m) (clearTimeout(timer), resolve(Number(m[1])));
    });
    server.once('exit', () => (clearTimeout(timer), reject(new Error(`serve exited:\n${serverLog.join('\n')}`))));
  });
  // The guides' examples use a test key in SIGNET_API_KEY, as README's first step makes one (README makes its own).
  const made = await fetch(`http://127.0.0.1:${port}/ops/customers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${readFileSync(path.join(dataDir, 'ops-token'), 'utf8').trim()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'guides@example.com', name: 'Guides', creditCents: 500 }),
  });
  assert.equal(made.status, 201, await made.clone().text());
  testApiKey = ((await made.json()) as { testApiKey: string }).testApiKey;
});

after(async () => {
  if (server?.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
  }
  rmSync(tmp, { recursive: true, force: true });
});

/** The docs' addresses, as this run has them. */
const localize = (code: string) =>
  code
    .replaceAll('localhost:3000', `127.0.0.1:${port}`)
    .replaceAll('localhost:4000', `127.0.0.1:${receiverPort}`)
    .replaceAll('PORT=4000', `PORT=${receiverPort}`);

/** Whether a Node block can run here: it imports only what this checkout installs. */
function missingImport(block: Block): string | undefined {
  for (const m of block.code.matchAll(/from '([^'.][^']*)'/g)) {
    const name = m[1].startsWith('node:') ? undefined : m[1].startsWith('@') ? m[1].split('/').slice(0, 2).join('/') : m[1].split('/')[0];
    if (!name) continue;
    try {
      readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'));
    } catch {
      return name;
    }
  }
  return undefined;
}

type Run = { code: number | null; stdout: string; stderr: string };
/** Runs one block in `dir`: variables and functions from the file's earlier blocks in, its own out. */
function runBlock(dir: string, block: Block, index: number): Promise<Run> {
  const source = block.chunks.map((c, n) => (n === 0 ? c.code : `${markStatement(block.lang, n)}\n${c.code}`)).join('\n');
  const ext = { sh: 'sh', js: 'mjs', ts: 'mts', python: 'py' }[block.lang];
  const file = `.snippet-${index}.${ext}`;
  writeFileSync(path.join(dir, file), localize(source));
  const run = block.lang === 'sh' ? `. ./${file}` : block.lang === 'python' ? `python3 ./${file}` : `node ./${file}`;
  const script = `set -a; [ -f .snippet-env ] && . ./.snippet-env; set -e -o pipefail\n${run}\nset +e; { export -p; declare -fx; } > .snippet-env\n`;
  return new Promise((resolve) => {
    const p = spawn('bash', ['-c', script], { cwd: dir, env: { ...process.env, NODE_TEST_CONTEXT: '' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    pgroups.push(p.pid!);
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (d) => (stdout += d));
    p.stderr!.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => process.kill(-p.pid!, 'SIGKILL'), BLOCK_TIMEOUT_MS);
    // Ends with bash: a background process a block starts (a receiver) may keep the pipes open.
    p.once('exit', (code) => (clearTimeout(timer), setTimeout(() => resolve({ code, stdout, stderr }), 50)));
  });
}
const pgroups: number[] = [];
after(() => {
  for (const pid of pgroups)
    try {
      process.kill(-pid, 'SIGTERM');
    } catch {
      // already gone
    }
});

describe('every snippet of README.md and docs/ runs and answers as documented', () => {
  for (const doc of DOCS) {
    test(doc, { timeout: 300_000 }, async (t) => {
      const blocks = extractBlocks(doc, readFileSync(path.join(ROOT, doc), 'utf8'));
      const dir = mkdtempSync(path.join(tmp, 'shell-'));
      // As in a checkout: `data/ops-token` where `npm start` wrote it, and the project's node_modules.
      symlinkSync(dataDir, path.join(dir, 'data'));
      symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
      if (doc !== 'README.md') writeFileSync(path.join(dir, '.snippet-env'), `export SIGNET_API_KEY=${testApiKey}\n`);
      for (const [index, block] of blocks.entries()) {
        const where = `${doc}:${block.line}`;
        if (block.skip) continue;
        if (block.saveAs) {
          writeFileSync(path.join(dir, block.saveAs), localize(block.code) + '\n');
          continue;
        }
        const missing = block.lang === 'sh' || block.lang === 'python' ? undefined : missingImport(block);
        if (missing) {
          t.diagnostic(`${where}: not run, ${missing} is not installed in this checkout`);
          continue;
        }
        const r = await runBlock(dir, block, index);
        assert.equal(r.code, 0, `${where}: the block failed (exit ${r.code})\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
        const outputs = splitOutput(r.stdout, block.chunks.length);
        for (const [n, chunk] of block.chunks.entries()) {
          if (!chunk.answer) continue;
          // The receiver's address is this run's; Signet's own stays PUBLIC_URL's localhost:3000.
          const diff = compareAnswer({ ...chunk.answer, text: chunk.answer.text.replaceAll('localhost:4000', `127.0.0.1:${receiverPort}`) }, outputs[n] ?? '');
          assert.equal(diff, undefined, `${doc}:${chunk.answer.line}: the answer differs: ${diff}\n--- the code (line ${chunk.line})\n${chunk.code}\n--- its output\n${(outputs[n] ?? '').slice(0, 3000)}\n--- stderr\n${r.stderr}`);
        }
      }
    });
  }
});
