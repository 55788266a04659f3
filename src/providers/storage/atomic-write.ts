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
  const dirHandle = await open(dir, 'r');
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}
