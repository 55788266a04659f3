import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/** Beside this module under tsx and in dist/ once the build copies them, like the signing page's files. */
export const DASHBOARD_ASSETS_DIR = fileURLToPath(new URL('./assets/', import.meta.url));

export type DashboardAssets = {
  /** `app-<hash of the files>`: a new build or Pico release gets new URLs, so the files may be cached forever. */
  prefix: string;
  get(key: string): { type: string; body: Buffer } | undefined;
};

/** Pico CSS from our own node_modules (never a CDN), then our few additions and the client script; read once at start. */
export function loadDashboardAssets(): DashboardAssets {
  const require = createRequire(import.meta.url);
  const files = new Map<string, string>([['pico.min.css', path.join(path.dirname(require.resolve('@picocss/pico/package.json')), 'css', 'pico.min.css')]]);
  for (const name of readdirSync(DASHBOARD_ASSETS_DIR).sort()) if (TYPES[path.extname(name)]) files.set(name, path.join(DASHBOARD_ASSETS_DIR, name));
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
