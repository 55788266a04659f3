import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type PutObjectCommandInput,
} from '@aws-sdk/client-s3';
import { assertBlobKey, InvalidBlobKeyError, type BlobStorage, type StoredBlob } from './blob-storage.js';

export type S3StorageOptions = {
  bucket: string;
  /** Any S3-compatible endpoint (MinIO, Ceph, R2, s3rver); AWS S3 itself when unset. */
  endpoint?: string;
  region: string;
  /** `endpoint/bucket/key` instead of `bucket.endpoint/key`: what most self-hosted stores need. */
  forcePathStyle: boolean;
  /** Unset: the SDK's default chain (AWS_* variables, shared config files, the instance or task role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Where the SDK's warnings go (a failed streamed upload is reported there before it throws). */
  onWarning?: (message: string) => void;
};

/** Attempts of a streamed upload: the SDK cannot retry one (the file stream is spent), so we do, with a new stream each time. */
const UPLOAD_ATTEMPTS = 3;

/** The SDK's "no such key" answer, by name or, from stores that answer a bare 404, by status. */
const isMissing = (err: unknown) => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
};
/** A refusal (4xx) will be refused again; anything else (5xx, throttling, a dropped connection) may pass next time. */
const isRetryable = (err: unknown) => {
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return status === undefined || status >= 500 || status === 429;
};

/**
 * Documents in an S3-compatible bucket (STORAGE_DRIVER=s3): every node reaches the same objects. A
 * PUT replaces an object atomically (readers see old or new bytes), so writes need no protocol of ours.
 */
export function createS3Storage(opts: S3StorageOptions): BlobStorage & { check(): Promise<void>; close(): void } {
  const warn = opts.onWarning ?? (() => {});
  const client = new S3Client({
    region: opts.region,
    endpoint: opts.endpoint,
    forcePathStyle: opts.forcePathStyle,
    // A copy: the SDK marks the object it is given (a frozen configuration's would make every call throw).
    credentials: opts.credentials && { ...opts.credentials },
    // Checksums only where S3 demands them: with the default (a CRC trailer on every upload) a
    // streamed PUT is sent aws-chunked, which some S3-compatible stores (s3rver 3.7) keep verbatim.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    // A store that does not answer is an error within bounds, not a job or a download that hangs.
    requestHandler: { connectionTimeout: 5_000, socketTimeout: 120_000 },
    // The SDK logs every call at info with this logger; only its warnings are worth keeping.
    logger: { trace: () => {}, debug: () => {}, info: () => {}, warn: (...a: unknown[]) => warn(a.map(String).join(' ')), error: (...a: unknown[]) => warn(a.map(String).join(' ')) },
  });
  const Bucket = opts.bucket;

  async function putObject(input: () => Pick<PutObjectCommandInput, 'Body' | 'ContentLength'>, Key: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const body = input();
      try {
        await client.send(new PutObjectCommand({ Bucket, Key, ...body }));
        return;
      } catch (err) {
        (body.Body as Readable | undefined)?.destroy?.();
        if (attempt >= UPLOAD_ATTEMPTS || !isRetryable(err)) throw err;
        await sleep(200 * 4 ** (attempt - 1));
      }
    }
  }

  async function getObject(key: string) {
    assertBlobKey(key);
    try {
      const { Body, ContentLength } = await client.send(new GetObjectCommand({ Bucket, Key: key }));
      return Body && { Body, ContentLength };
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  return {
    async put(key, bytes) {
      assertBlobKey(key);
      await putObject(() => ({ Body: bytes, ContentLength: bytes.byteLength }), key);
    },

    // Streamed from the file with its length given, so the SDK sends it as it reads it: never in memory.
    // A moved file is left for its owner to remove, as the interface allows.
    async putFile(key, file) {
      assertBlobKey(key);
      const { size } = await stat(file);
      await putObject(() => ({ Body: createReadStream(file), ContentLength: size }), key);
    },

    async get(key) {
      const object = await getObject(key);
      if (!object) return undefined;
      const bytes = await object.Body.transformToByteArray();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },

    async getStream(key) {
      const object = await getObject(key);
      if (!object) return undefined;
      // In Node the body is the response stream itself: the caller pipes it and it is never held whole.
      // Its length is the object's, from the same answer.
      const stream = object.Body as Readable;
      if (object.ContentLength === undefined) {
        stream.destroy();
        throw new Error(`blob ${key}: the store gave no Content-Length`);
      }
      return { stream, size: object.ContentLength };
    },

    async delete(key) {
      assertBlobKey(key);
      // S3 answers a delete of a missing key with success: a job may run twice.
      await client.send(new DeleteObjectCommand({ Bucket, Key: key }));
    },

    async *list(prefix): AsyncIterable<StoredBlob> {
      const segments = prefix.split('/').filter(Boolean);
      if (segments.length > 0) assertBlobKey(segments.join('/'));
      let ContinuationToken: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix || undefined, ContinuationToken }));
        for (const o of page.Contents ?? []) {
          // Objects another tool put in the bucket (a console's folder marker) are no blobs of ours:
          // the purge deletes every key it is given, and would fail on one it cannot name.
          if (!o.Key || !o.LastModified || !isBlobKey(o.Key)) continue;
          yield { key: o.Key, modifiedAt: o.LastModified };
        }
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken);
    },

    async check() {
      await client.send(new HeadBucketCommand({ Bucket }));
    },

    close: () => client.destroy(),
  };
}

function isBlobKey(key: string): boolean {
  try {
    assertBlobKey(key);
    return true;
  } catch (err) {
    if (err instanceof InvalidBlobKeyError) return false;
    throw err;
  }
}
