#!/usr/bin/env node
// The `signet` command runs the compiled CLI (`npm run build` produces dist/) on Node.js 22.12 or newer.
// Inside npm scripts and npx, `node` is already the runtime the project installed (node-<os>-<cpu>, an
// optional dependency; README: Runtime). Called some other way under an older `node`, it hands over
// to that runtime rather than run a signing service on a Node.js without security fixes.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major > 22 || (major === 22 && minor >= 12)) {
  import('../dist/cli.js').catch((err) => {
    if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli.js')) {
      console.error('signet: dist/ is missing; run `npm run build` first');
      process.exit(1);
    }
    throw err;
  });
} else {
  let runtime;
  try {
    runtime = createRequire(import.meta.url).resolve(`node-${process.platform}-${process.arch}/bin/node`);
  } catch {
    console.error(`signet: Node.js 22.12 or newer is needed, and this is ${process.version}; \`npm install\` brings Node.js 24 on Linux and macOS on Intel`);
    process.exit(1);
  }
  const child = spawn(runtime, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  // An orchestrator's SIGTERM reaches this process only: pass it on, so the server drains and stops.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    // Die of the same signal, as the caller expects (our handler for it removed first).
    if (signal) process.removeAllListeners(signal).kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}
