import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);

/** One static file of the signing page, held in memory once read. */
export type StaticAsset = { type: string; body: Buffer; gzip: Buffer | undefined };

export type SigningAssets = {
  /** URL segment of our own client files, `app-<hash>`: a new build gets new URLs, so they may be cached forever. */
  appPrefix: string;
  /** URL segment of the pdf.js files, `pdfjs-<version>`. */
  pdfjsPrefix: string;
  /** `<prefix>/<file>` → the asset, or undefined for anything not on the list (no path ever reaches the disk). */
  get(key: string): Promise<StaticAsset> | undefined;
};

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.bcmap': 'application/octet-stream',
  '.pfb': 'application/octet-stream',
  '.ttf': 'font/ttf',
  '.icc': 'application/vnd.iccprofile',
};
// Worth compressing: the pdf.js worker is ~1 MB of text and ~0.3 MB gzipped, which matters on a phone.
const COMPRESSIBLE = new Set(['.js', '.mjs', '.css', '.wasm', '.ttf']);

/**
 * Our own files sit beside this module (src/web/signing/assets under tsx, dist/web/signing/assets once the
 * build copies them), so the same code finds them in both layouts.
 */
export const APP_ASSETS_DIR = fileURLToPath(new URL('./assets/', import.meta.url));

function pdfjsRoot(): { dir: string; version: string } {
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve('pdfjs-dist/package.json');
  const version = (JSON.parse(readFileSync(pkgPath, 'utf8')) as { version: string }).version;
  return { dir: path.dirname(pkgPath), version };
}

/** intl-messageformat's browser build (an ES module despite its name), served as `<app>/intl-messageformat.js`. */
function messageFormatBuild(): string {
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve('intl-messageformat')), 'intl-messageformat.iife.js');
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && TYPES[path.extname(e.name)] !== undefined)
    .map((e) => e.name)
    .sort();
}

/**
 * Builds the allow-list of files the page may load: our client modules and stylesheet, and from
 * pdfjs-dist the library, its worker, and the data it fetches at run time (CMaps for CJK text, the
 * standard fonts for PDFs that do not embed theirs, the wasm decoders for JPEG 2000 and JBIG2 images,
 * ICC profiles). Files are read on first request and kept.
 */
export function loadSigningAssets(): SigningAssets {
  const files = new Map<string, string>();

  const appFiles = new Map(listFiles(APP_ASSETS_DIR).map((name) => [name, path.join(APP_ASSETS_DIR, name)]));
  appFiles.set('intl-messageformat.js', messageFormatBuild());
  const hash = createHash('sha256');
  for (const [name, file] of appFiles) hash.update(name).update('\0').update(readFileSync(file));
  const appPrefix = `app-${hash.digest('hex').slice(0, 12)}`;
  for (const [name, file] of appFiles) files.set(`${appPrefix}/${name}`, file);

  const pdfjs = pdfjsRoot();
  const pdfjsPrefix = `pdfjs-${pdfjs.version}`;
  for (const name of ['pdf.min.mjs', 'pdf.worker.min.mjs', 'pdf.renderer.min.mjs']) files.set(`${pdfjsPrefix}/${name}`, path.join(pdfjs.dir, 'build', name));
  for (const sub of ['cmaps', 'standard_fonts', 'wasm', 'iccs']) {
    const dir = path.join(pdfjs.dir, sub);
    for (const name of listFiles(dir)) files.set(`${pdfjsPrefix}/${sub}/${name}`, path.join(dir, name));
  }

  // The promise is cached, so concurrent first requests read and compress a file once.
  const loaded = new Map<string, Promise<StaticAsset>>();
  const load = async (file: string): Promise<StaticAsset> => {
    const ext = path.extname(file);
    const body = await readFile(file);
    return { type: TYPES[ext], body, gzip: COMPRESSIBLE.has(ext) && body.length > 1024 ? await gzipAsync(body, { level: 9 }) : undefined };
  };
  return {
    appPrefix,
    pdfjsPrefix,
    get(key) {
      let asset = loaded.get(key);
      if (asset) return asset;
      const file = files.get(key);
      if (!file) return undefined;
      asset = load(file);
      // A failed read is not kept, so a later request tries again.
      asset.catch(() => loaded.delete(key));
      loaded.set(key, asset);
      return asset;
    },
  };
}
