import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export type InflateGuard = {
  tripped(): boolean;
  /** Starts counting afresh (a new job). */
  reset(): void;
};

type InflateProto = { onData(this: { __inflated?: number }, chunk: Uint8Array): void };

/**
 * Caps how much one Flate stream may expand, and how much all of them may expand together.
 *
 * Worker resourceLimits bound the JS heap, but decoded stream data lives in ArrayBuffers outside it:
 * a 25 MB upload of deflated zeros expands to gigabytes and would take the whole process down, not
 * just the worker. @libpdf/core inflates with pako, whose Inflate hands every output chunk to
 * `onData`; throwing there stops the expansion. libpdf swallows the error and carries on with an
 * empty stream, so the caller asks `tripped()` afterwards and refuses the file.
 *
 * Only for a worker that parses untrusted PDFs: it patches the module for the whole thread.
 * Answers null when pako cannot be found next to @libpdf/core (then only the timeout bounds a bomb).
 */
export async function installInflateGuard(limits: { perStreamBytes: number; totalBytes: number }): Promise<InflateGuard | null> {
  let proto: InflateProto;
  try {
    // The pako instance libpdf imports, not whichever copy our own resolution would find.
    const libpdfEntry = fileURLToPath(import.meta.resolve('@libpdf/core'));
    const pkgPath = createRequire(libpdfEntry).resolve('pako/package.json');
    const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { module?: string; exports?: { '.'?: { import?: string } } };
    const entry = pkg.exports?.['.']?.import ?? pkg.module;
    if (!entry) return null;
    const mod = (await import(pathToFileURL(join(dirname(pkgPath), entry)).href)) as { Inflate?: { prototype: InflateProto } };
    if (!mod.Inflate) return null;
    proto = mod.Inflate.prototype;
  } catch {
    return null;
  }
  const original = proto.onData;
  let total = 0;
  let tripped = false;
  proto.onData = function (chunk) {
    this.__inflated = (this.__inflated ?? 0) + chunk.length;
    total += chunk.length;
    if (this.__inflated > limits.perStreamBytes || total > limits.totalBytes) {
      tripped = true;
      throw new Error('inflate limit reached');
    }
    original.call(this, chunk);
  };
  return {
    tripped: () => tripped,
    reset: () => {
      total = 0;
      tripped = false;
    },
  };
}
