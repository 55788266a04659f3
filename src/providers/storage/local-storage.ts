import { open, readFile, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { writeFileAtomic } from './atomic-write.js';
import { assertBlobKey, type BlobStorage } from './blob-storage.js';

/** Missing file, or a "file" that is really a directory (key `a` when `a/b` exists): no blob either way. */
const isAbsent = (err: unknown) => ['ENOENT', 'EISDIR', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '');

/** The built-in storage: one file per key under `root` (DATA_DIR/blobs). */
export function createLocalStorage(root: string): BlobStorage {
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

    async getStream(key): Promise<Readable | undefined> {
      const file = fileOf(key);
      // Open first so a missing key is reported as undefined, not as a stream that errors later.
      let handle: FileHandle;
      try {
        handle = await open(file, 'r');
      } catch (err) {
        if (isAbsent(err)) return undefined;
        throw err;
      }
      const isDirectory = await handle.stat().then((s) => s.isDirectory(), async (err) => {
        await handle.close();
        throw err;
      });
      if (isDirectory) {
        await handle.close();
        return undefined;
      }
      // The stream closes the handle when it ends or is destroyed.
      return handle.createReadStream();
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
