import { randomBytes } from 'node:crypto';
import { constants, copyFile, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/** Temporary files of atomic writes start with this; blob keys and outbox names never do. */
export const TEMP_PREFIX = '.tmp-';

/**
 * Writes `bytes` to `file` so that no reader ever sees a partial file, and so that once this resolves
 * the data survives a crash: write a temporary file in the same directory (rename is atomic only
 * within one file system), fsync it, rename it over the target, fsync the directory to persist the rename.
 */
export async function writeFileAtomic(file: string, bytes: Uint8Array): Promise<void> {
  await replaceAtomic(file, async (temp) => {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
  });
}

/**
 * Copies `source` to `file` as writeFileAtomic writes: the copy is made by the kernel (or shares the
 * source's blocks where the file system can clone them), so a large upload never passes through our memory.
 */
export async function copyFileAtomic(file: string, source: string): Promise<void> {
  await replaceAtomic(file, async (temp) => {
    await copyFile(source, temp, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
    const handle = await open(temp, 'r+');
    try {
      // copyFile gives the copy its source's mode; blobs are ours alone whatever the source was.
      await handle.chmod(0o600);
      await handle.sync();
    } finally {
      await handle.close();
    }
  });
}

/**
 * Moves `source`, a file its caller gives up (an upload), to `file` with writeFileAtomic's guarantees
 * and without copying a byte: fsync the file, rename it over the target (atomic: readers see the old
 * or the whole new file), fsync the directory to persist the rename. A rename cannot cross file
 * systems (EXDEV: blobs on another mount than DATA_DIR/tmp): the file is then copied as
 * copyFileAtomic does, and left where it was for its owner to remove. On failure the file is where it was.
 */
export async function moveFileAtomic(file: string, source: string): Promise<void> {
  const handle = await open(source, 'r');
  try {
    // Blobs are ours alone whatever the file was; and a stored blob's age (what the sweep of
    // unreferenced blobs reads) counts from now, as a copy's would, not from the upload's last write.
    await handle.chmod(0o600);
    const now = new Date();
    await handle.utimes(now, now);
    // Before the rename: a crash must never leave the name pointing at data that is not on disk yet.
    await handle.sync();
  } finally {
    await handle.close();
  }
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true });
  try {
    await rename(source, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EXDEV') return copyFileAtomic(file, source);
    throw err;
  }
  await syncDirectory(dir);
}

async function replaceAtomic(file: string, fill: (temp: string) => Promise<void>): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true });
  const temp = path.join(dir, `${TEMP_PREFIX}${path.basename(file)}-${randomBytes(8).toString('hex')}`);
  try {
    await fill(temp);
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncDirectory(dir);
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
