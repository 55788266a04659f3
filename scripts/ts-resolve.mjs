/**
 * Runs the TypeScript sources without a build, on Node.js's own type stripping: `node --import
 * ./scripts/ts-resolve.mjs file.ts` (the tests, their child processes and the PDF workers they start).
 * The sources import their siblings as `./x.js`, the name they have once built; this hook resolves such a
 * specifier to `./x.ts` when the importer is one of our .ts files and that file exists. A synchronous,
 * in-thread hook: no loader thread, no transform of node_modules, unlike tsx (about 0.7 s of CPU per
 * test process).
 *
 * It also spares each test process about 1 s of CPU that Node.js's own resolution spends again and again
 * (measured on Node 24.21, importing the app: 1.7 s of CPU with Node's resolution alone, 0.6 s
 * with this hook). Node parses the whole package.json of a module's package on every resolution it makes to
 * that package: drizzle-orm's is 179 KB, and importing the app resolves 404 relative imports inside
 * drizzle-orm (about 1.8 ms each) and, from our files, `drizzle-orm` and its entry points about 150 times.
 * So: a bare specifier imported by our own files resolves once per process (the repository has one
 * node_modules, so the answer does not depend on which of our files asks); a relative `.js`/`.mjs`/`.cjs`
 * import inside node_modules is resolved here, its format taken from the package's "type", which is read
 * once per directory. Whatever else, or a package without a "type", goes to Node.js.
 */
import { existsSync, readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** This repository: the files whose bare specifiers resolve through its one node_modules. */
const ROOT = new URL('../', import.meta.url).href;
const bareResolved = new Map();
const typeOfDir = new Map();

/** The "type" of the nearest package.json above `dir` ('module' or 'commonjs'), or undefined when it has none. */
function packageType(dir) {
  if (typeOfDir.has(dir)) return typeOfDir.get(dir);
  let type;
  const file = path.join(dir, 'package.json');
  if (existsSync(file)) {
    const declared = JSON.parse(readFileSync(file, 'utf8')).type;
    type = declared === 'module' || declared === 'commonjs' ? declared : undefined;
  } else if (path.basename(dir) !== 'node_modules' && path.dirname(dir) !== dir) {
    type = packageType(path.dirname(dir));
  }
  typeOfDir.set(dir, type);
  return type;
}

/** A relative import inside node_modules, resolved without Node's per-resolution package.json parse; or undefined. */
function resolveInPackage(specifier, parent, conditions) {
  if (conditions?.includes('require') || /[?#]/.test(specifier)) return undefined;
  const ext = path.extname(specifier);
  if (ext !== '.js' && ext !== '.mjs' && ext !== '.cjs') return undefined;
  const url = new URL(specifier, parent);
  const file = fileURLToPath(url);
  if (!existsSync(file)) return undefined;
  const format = ext === '.mjs' ? 'module' : ext === '.cjs' ? 'commonjs' : packageType(path.dirname(file));
  return format ? { url: url.href, format, shortCircuit: true } : undefined;
}

registerHooks({
  resolve(specifier, context, next) {
    const parent = context.parentURL;
    if (!parent?.startsWith('file:')) return next(specifier, context);
    const relative = specifier.startsWith('./') || specifier.startsWith('../');
    if (parent.includes('/node_modules/')) return (relative && resolveInPackage(specifier, parent, context.conditions)) || next(specifier, context);
    if (!parent.endsWith('.ts')) return next(specifier, context);
    if (relative && specifier.endsWith('.js')) {
      const ts = new URL(`${specifier.slice(0, -3)}.ts`, parent);
      if (existsSync(ts)) return next(ts.href, context);
    }
    if (relative || !parent.startsWith(ROOT) || specifier.startsWith('/') || specifier.includes(':') || specifier.startsWith('#')) return next(specifier, context);
    const key = `${specifier}\0${context.conditions?.join()}\0${JSON.stringify(context.importAttributes ?? {})}`;
    let resolved = bareResolved.get(key);
    if (!resolved) bareResolved.set(key, (resolved = next(specifier, context)));
    return { ...resolved, shortCircuit: true };
  },
});
