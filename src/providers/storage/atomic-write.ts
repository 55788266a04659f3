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
  try {
    await inDirectory(dir, () => rename(source, file));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EXDEV') return copyFileAtomic(file, source);
    throw err;
  }
  await syncDirectory(dir);
}

async function replaceAtomic(file: string, fill: (temp: string) => Promise<void>): Promise<void> {
  const dir = path.dirname(file);
  const temp = path.join(dir, `${TEMP_PREFIX}${path.basename(file)}-${randomBytes(8).toString('hex')}`);
  try {
    await inDirectory(dir, () => fill(temp));
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncDirectory(dir);
}

/**
 * Directories this process made or found, so a write into one (the outbox, a blob's folder) costs no
 * mkdir (two system calls when it exists). Bounded: forgetting one costs a mkdir, nothing else.
 */
const knownDirectories = new Set<string>();
const KNOWN_DIRECTORIES_MAX = 1024;

/**
 * Runs `work` (which creates a file in `dir`) with `dir` made first unless known to exist; a known
 * directory removed since (ENOENT) is made again and `work` retried once, as a mkdir first would have.
 */
async function inDirectory<T>(dir: string, work: () => Promise<T>): Promise<T> {
  if (knownDirectories.has(dir)) {
    try {
      return await work();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      knownDirectories.delete(dir);
    }
  }
  await mkdir(dir, { recursive: true });
  if (knownDirectories.size >= KNOWN_DIRECTORIES_MAX) knownDirectories.clear();
  knownDirectories.add(dir);
  return work();
}

type DirectorySync = { current: Promise<void>; next?: Promise<void> };
/** Per directory: the fsync under way, and the one callers who came during it wait for. */
const directorySyncs = new Map<string, DirectorySync>();

/**
 * Persists the renames made in `dir` so far. Group commit: a caller that comes while an fsync of
 * `dir` is under way cannot count on it (it may have begun before the caller's rename), so it waits
 * for the next one, which begins when that one ends and covers everyone who came meanwhile. Each
 * caller still resolves only after an fsync that began after its rename; concurrent writes into one
 * directory (the outbox's invitations) share one instead of paying one each.
 */
export function syncDirectory(dir: string): Promise<void> {
  const entry = directorySyncs.get(dir);
  if (!entry) return startDirectorySync(dir);
  return (entry.next ??= entry.current.then(
    () => startDirectorySync(dir),
    () => startDirectorySync(dir),
  ));
}

function startDirectorySync(dir: string): Promise<void> {
  const entry: DirectorySync = { current: fsyncDirectory(dir) };
  directorySyncs.set(dir, entry);
  entry.current = entry.current.finally(() => {
    // With callers waiting (entry.next), the next fsync replaces this entry when it starts.
    if (!entry.next && directorySyncs.get(dir) === entry) directorySyncs.delete(dir);
  });
  return entry.current;
}

async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
