import { constants } from 'node:fs';
import { access, lstat, mkdir, open, opendir, readFile, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { copyFileAtomic, moveFileAtomic, writeFileAtomic } from './atomic-write.js';
import { assertBlobKey, type BlobStorage, type BlobStream, type StoredBlob } from './blob-storage.js';

/** Missing file, or a "file" that is really a directory (key `a` when `a/b` exists): no blob either way. */
const isAbsent = (err: unknown) => ['ENOENT', 'EISDIR', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '');

/** The built-in storage: one file per key under `root` (DATA_DIR/blobs). */
export function createLocalStorage(root: string): BlobStorage & { check(): Promise<void> } {
  const base = path.resolve(root);
  const fileOf = (key: string) => {
    assertBlobKey(key);
    const file = path.join(base, ...key.split('/'));
    // Belt and braces on top of assertBlobKey: the path must stay strictly inside the root.
    if (!file.startsWith(base + path.sep)) throw new Error(`blob key escapes the storage root: ${key}`);
    return file;
  };

  return {
    async put(key, bytes) {
      await writeFileAtomic(fileOf(key), bytes);
    },

    async putFile(key, file, opts) {
      // A file given up is renamed into place: no byte is read or written again.
      if (opts?.move) await moveFileAtomic(fileOf(key), file);
      else await copyFileAtomic(fileOf(key), file);
    },

    async get(key) {
      const file = fileOf(key);
      try {
        // A Buffer is a Uint8Array; callers that hand it to Fastify or node:crypto need no copy.
        return await readFile(file);
      } catch (err) {
        if (isAbsent(err)) return undefined;
        throw err;
      }
    },

    async getStream(key): Promise<BlobStream | undefined> {
      const file = fileOf(key);
      // Open first so a missing key is reported as undefined, not as a stream that errors later.
      let handle: FileHandle;
      try {
        handle = await open(file, 'r');
      } catch (err) {
        if (isAbsent(err)) return undefined;
        throw err;
      }
      const stats = await handle.stat().catch(async (err) => {
        await handle.close();
        throw err;
      });
      if (stats.isDirectory()) {
        await handle.close();
        return undefined;
      }
      // The size of the file this handle reads: a write replaces the file (a rename), never this one.
      // The stream closes the handle when it ends or is destroyed.
      return { stream: handle.createReadStream(), size: stats.size };
    },

    async *list(prefix): AsyncIterable<StoredBlob> {
      const segments = prefix.split('/').filter(Boolean);
      if (segments.length > 0) assertBlobKey(segments.join('/'));
      yield* walk(path.join(base, ...segments), segments);
    },

    async check() {
      // The root may not exist before the first write; once it does, it must be ours to write.
      await mkdir(base, { recursive: true });
      await access(base, constants.R_OK | constants.W_OK);
    },

    async delete(key) {
      // Empty parent directories are left in place: removing them would race with a concurrent put.
      try {
        await unlink(fileOf(key));
      } catch (err) {
        if (!isAbsent(err)) throw err;
      }
    },
  };
}

/**
 * Streams the files under `dir` as keys (directory by directory, never the whole tree in memory).
 * Names starting with '.' are skipped: they are not keys (the '.tmp-' files of atomic writes).
 */
async function* walk(dir: string, keyOf: string[]): AsyncGenerator<StoredBlob> {
  let entries;
  try {
    entries = await opendir(dir);
  } catch (err) {
    if (isAbsent(err)) return;
    throw err;
  }
  for await (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(full, [...keyOf, entry.name]);
    else if (entry.isFile()) {
      // Deleted between the listing and the stat: not there any more, nothing to report.
      const stat = await lstat(full).catch((err) => (isAbsent(err) ? undefined : Promise.reject(err)));
      if (stat) yield { key: [...keyOf, entry.name].join('/'), modifiedAt: stat.mtime };
    }
  }
}
