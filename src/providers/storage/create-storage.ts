import type { Db } from '../../db/client.js';
import type { BlobStorage } from './blob-storage.js';
import { createLocalStorage } from './local-storage.js';
import { createPostgresStorage } from './postgres-storage.js';
import type { S3StorageOptions } from './s3-storage.js';

export type StorageDriverOptions = {
  driver: 'local' | 'postgres' | 's3';
  /** The local driver's directory (DATA_DIR/blobs). */
  root: string;
  db: Db;
  s3: Omit<S3StorageOptions, 'onWarning'> | undefined;
  logger: { warn(msg: string): void };
};

/**
 * The store STORAGE_DRIVER names; every driver has check() for /health. The S3 driver (and its SDK,
 * several MiB of heap) is loaded only when it is the one configured.
 */
export async function createBlobStorage(opts: StorageDriverOptions): Promise<BlobStorage & { check(): Promise<void> }> {
  switch (opts.driver) {
    case 'local':
      return createLocalStorage(opts.root);
    case 'postgres':
      return createPostgresStorage(opts.db);
    case 's3':
      if (!opts.s3) throw new Error('STORAGE_DRIVER=s3 without an S3 configuration');
      return (await import('./s3-storage.js')).createS3Storage({ ...opts.s3, onWarning: (message) => opts.logger.warn(message) });
  }
}
