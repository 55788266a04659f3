export { TEMP_PREFIX, writeFileAtomic } from './atomic-write.js';
export { assertBlobKey, InvalidBlobKeyError, putContent, type BlobStorage, type PutFileOptions, type StoredBlob } from './blob-storage.js';
export { createLocalStorage } from './local-storage.js';
