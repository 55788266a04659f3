import { ConfigError } from './config-error.js';

/** The storage variables as config.ts validated them (shapes checked, nothing defaulted yet). */
export type StorageEnv = {
  STORAGE_DRIVER: 'local' | 'postgres' | 's3';
  S3_BUCKET?: string;
  S3_ENDPOINT?: string;
  S3_REGION?: string;
  S3_ACCESS_KEY_ID?: string;
  S3_SECRET_ACCESS_KEY?: string;
  S3_FORCE_PATH_STYLE?: boolean;
};

export type S3Config = Readonly<{
  bucket: string;
  /** Any S3-compatible endpoint; AWS S3 itself when unset. */
  endpoint: string | undefined;
  region: string;
  forcePathStyle: boolean;
  /** Unset: the AWS SDK's default credential chain (AWS_* variables, shared config files, an instance or task role). */
  credentials: Readonly<{ accessKeyId: string; secretAccessKey: string }> | undefined;
}>;

/** STORAGE_DRIVER=s3's settings; undefined for the other drivers. Throws ConfigError naming the variable. */
export function s3Config(e: StorageEnv): S3Config | undefined {
  const given = { S3_BUCKET: e.S3_BUCKET, S3_ENDPOINT: e.S3_ENDPOINT, S3_REGION: e.S3_REGION, S3_ACCESS_KEY_ID: e.S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: e.S3_SECRET_ACCESS_KEY, S3_FORCE_PATH_STYLE: e.S3_FORCE_PATH_STYLE };
  if (e.STORAGE_DRIVER !== 's3') {
    // A bucket configured but not used would leave each node's documents on its own disk: say so at start.
    const orphan = Object.entries(given).find(([, v]) => v !== undefined)?.[0];
    if (orphan) throw new ConfigError(`Invalid configuration: ${orphan}: requires STORAGE_DRIVER=s3`);
    return undefined;
  }
  if (e.S3_BUCKET === undefined) throw new ConfigError('Invalid configuration: S3_BUCKET: required when STORAGE_DRIVER=s3');
  const keys = { S3_ACCESS_KEY_ID: e.S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: e.S3_SECRET_ACCESS_KEY };
  const missingKey = Object.entries(keys).find(([, v]) => v === undefined)?.[0];
  if (missingKey && Object.values(keys).some((v) => v !== undefined)) {
    throw new ConfigError(`Invalid configuration: ${missingKey}: set both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, or neither for the AWS SDK's default credentials`);
  }
  return Object.freeze({
    bucket: e.S3_BUCKET,
    endpoint: e.S3_ENDPOINT,
    region: e.S3_REGION ?? 'us-east-1',
    forcePathStyle: e.S3_FORCE_PATH_STYLE ?? false,
    credentials: missingKey ? undefined : Object.freeze({ accessKeyId: e.S3_ACCESS_KEY_ID!, secretAccessKey: e.S3_SECRET_ACCESS_KEY! }),
  });
}
