import { spawn } from 'node:child_process';

/**
 * Creates a PGlite data directory (PostgreSQL's initdb) in a short-lived child process, for the
 * server to open afterwards as it opens one on a restart. Run in the server's own process, initdb left
 * some 40 MiB resident for good that a restart on the same directory does not hold (WebAssembly
 * memory grown and allocations freed to no one); in a child that memory ends with it
 * (docs/operating.md: Memory). The child is plain `node -e`, without this process's flags or loaders:
 * it only imports PGlite.
 */
export async function initPgliteDataDir(dir: string): Promise<void> {
  const pglite = import.meta.resolve('@electric-sql/pglite');
  const script = `const { PGlite } = await import(${JSON.stringify(pglite)}); const db = await PGlite.create(process.argv[1]); await db.close();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    // The end is what tells why it failed; a runaway child must not grow this process either.
    stderr = (stderr + chunk).slice(-4000);
  });
  const exit = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve(signal ?? String(code)));
  });
  if (exit !== '0') throw new Error(`creating the PGlite database in ${dir} failed (exit ${exit}): ${stderr.trim()}`);
}
