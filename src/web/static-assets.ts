import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

export type PageAssets = {
  /** `app-<hash of the files>`: a new build (or a new release of a vendored file) gets new URLs, so the files may be cached forever. */
  prefix: string;
  get(key: string): { type: string; body: Buffer } | undefined;
};

/**
 * The small static files of one server-rendered page (the verify, document verification and dashboard
 * pages; the signing page has its own loader for pdf.js): the .js and .css files in `dir`, after the
 * `extra` files (name → path: a shared stylesheet, a vendored one). All are read once at start, and only
 * these names are ever served, under `<prefix>/<name>`.
 */
export function loadPageAssets(dir: string, extra: ReadonlyMap<string, string> = new Map()): PageAssets {
  const files = new Map(extra);
  for (const name of readdirSync(dir).sort()) if (TYPES[path.extname(name)]) files.set(name, path.join(dir, name));
  const hash = createHash('sha256');
  const bodies = new Map<string, Buffer>();
  for (const [name, file] of files) {
    const body = readFileSync(file);
    hash.update(name).update('\0').update(body);
    bodies.set(name, body);
  }
  const prefix = `app-${hash.digest('hex').slice(0, 12)}`;
  return {
    prefix,
    get(key) {
      const [p, name, ...rest] = key.split('/');
      const body = p === prefix && rest.length === 0 ? bodies.get(name) : undefined;
      return body && { type: TYPES[path.extname(name)], body };
    },
  };
}
