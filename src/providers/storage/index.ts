export { TEMP_PREFIX, writeFileAtomic } from './atomic-write.js';
export { assertBlobKey, InvalidBlobKeyError, putContent, type BlobStorage, type BlobStream, type PutFileOptions, type StoredBlob } from './blob-storage.js';
export { createBlobStorage, type StorageDriverOptions } from './create-storage.js';
export { createLocalStorage } from './local-storage.js';
export { createPostgresStorage } from './postgres-storage.js';
export type { S3StorageOptions } from './s3-storage.js';
