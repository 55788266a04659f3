import type { Readable } from 'node:stream';

/**
 * Where Signet keeps document bytes (uploaded and signed PDFs). Keys are opaque slash-separated paths
 * chosen by our code (e.g. `envelopes/<id>/original.pdf`); the shape is S3's, so an S3 adapter can
 * implement this interface without changing any caller.
 */
export interface BlobStorage {
  /** Stores the bytes under the key, replacing any previous value; readers see the old or the new bytes, never a mix. */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /**
   * Stores the file at `file` under the key, as put does, without reading it into memory (a streamed
   * upload). By default a copy is stored and the file left as it was. With `move`, the caller gives the
   * file up: a store may move it into place instead of copying it (the local store renames it), so it
   * may be gone afterwards, or still there (a store that copies or streams it); either way its owner
   * still removes what is left (a missing file is no error there). On failure the file is where it was.
   */
  putFile(key: string, file: string, opts?: PutFileOptions): Promise<void>;
  /** The bytes under the key, or undefined when there are none. */
  get(key: string): Promise<Uint8Array | undefined>;
  /**
   * The bytes as a stream (for large downloads) with their length, read with the stream (one object,
   * one generation), or undefined when there are none. A stream ends with an error, never with other
   * bytes, when it cannot give exactly `size` bytes of what was stored.
   */
  getStream(key: string): Promise<BlobStream | undefined>;
  /** Removes the key; removing a key that does not exist is not an error (jobs may run twice). */
  delete(key: string): Promise<void>;
  /**
   * Every key under the prefix (a whole path segment, e.g. `documents/`) with when it was last written,
   * in no particular order: what the sweep of unreferenced blobs walks. Every adapter should have it;
   * a store without it (a wrapping test fake) is simply never swept.
   */
  list?(prefix: string): AsyncIterable<StoredBlob>;
  /** Resolves when the store answers (a cheap read, for /health); throws with the reason otherwise. */
  check?(): Promise<void>;
}

export type StoredBlob = { key: string; modifiedAt: Date };

export type BlobStream = { stream: Readable; size: number };

export type PutFileOptions = { move?: boolean };

/** Bytes to store: in memory, or in a file (an upload streamed to disk). */
export type BlobContent = { bytes: Uint8Array } | { file: string };

/** Stores `content` under the key with put or putFile, whichever its shape needs; `opts` is putFile's. */
export function putContent(storage: Pick<BlobStorage, 'put' | 'putFile'>, key: string, content: BlobContent, opts?: PutFileOptions): Promise<void> {
  return 'file' in content ? storage.putFile(key, content.file, opts) : storage.put(key, content.bytes);
}

export class InvalidBlobKeyError extends Error {
  constructor(key: string, reason: string) {
    super(`Invalid blob key ${JSON.stringify(key.slice(0, 200))}: ${reason}`);
    this.name = 'InvalidBlobKeyError';
  }
}

/** S3's limit on key length, so a key valid here stays valid there. */
const MAX_KEY_LENGTH = 1024;
const SEGMENT = /^[A-Za-z0-9_.-]+$/;

/**
 * Refuses any key that could escape the storage root or that a file system or S3 treats specially.
 * Security invariant: a valid key maps to a path strictly inside the root. Segments must not start
 * with '.', which rules out '.' and '..', hidden files, and the '.tmp-' files of atomic writes.
 */
export function assertBlobKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidBlobKeyError(String(key), 'empty');
  if (key.length > MAX_KEY_LENGTH) throw new InvalidBlobKeyError(key, `longer than ${MAX_KEY_LENGTH} characters`);
  if (key.startsWith('/')) throw new InvalidBlobKeyError(key, 'starts with /');
  if (key.includes('..')) throw new InvalidBlobKeyError(key, 'contains ..');
  for (const segment of key.split('/')) {
    if (segment === '') throw new InvalidBlobKeyError(key, 'has an empty path segment');
    if (!SEGMENT.test(segment)) throw new InvalidBlobKeyError(key, 'only A-Z a-z 0-9 / _ . - are allowed');
    if (segment.startsWith('.')) throw new InvalidBlobKeyError(key, 'a path segment starts with .');
  }
}
