import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/** Beside this module under tsx and in dist/ once the build copies them, like the signing page's files. */
export const VERIFY_ASSETS_DIR = fileURLToPath(new URL('./assets/', import.meta.url));

export type VerifyAssets = {
  /** `app-<hash of the files>`: a new build gets new URLs, so the files may be cached forever. */
  prefix: string;
  get(key: string): { type: string; body: Buffer } | undefined;
};

/** The page's two small files, read once at start; only these names are ever served. */
export function loadVerifyAssets(): VerifyAssets {
  const names = readdirSync(VERIFY_ASSETS_DIR).filter((n) => TYPES[path.extname(n)] !== undefined).sort();
  const hash = createHash('sha256');
  const bodies = new Map<string, Buffer>();
  for (const name of names) {
    const body = readFileSync(path.join(VERIFY_ASSETS_DIR, name));
    hash.update(name).update('\0').update(body);
    bodies.set(name, body);
  }
  const prefix = `app-${hash.digest('hex').slice(0, 12)}`;
  return {
    prefix,
    get(key) {
      const [dir, name, ...rest] = key.split('/');
      const body = dir === prefix && rest.length === 0 ? bodies.get(name) : undefined;
      return body && { type: TYPES[path.extname(name)], body };
    },
  };
}
