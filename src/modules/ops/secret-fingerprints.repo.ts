import { sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client.js';
import { secretFingerprints } from '../../db/schema/index.js';

export type SecretFingerprint = { name: string; salt: string; fingerprint: string };

const columns = { name: secretFingerprints.name, salt: secretFingerprints.salt, fingerprint: secretFingerprints.fingerprint };

export function createSecretFingerprintsRepo() {
  return {
    async all(db: DbOrTx): Promise<SecretFingerprint[]> {
      return db.select(columns).from(secretFingerprints).orderBy(secretFingerprints.name);
    },
    /** Every row, read under a transaction-scoped lock: nodes starting side by side write one at a time. */
    async allLocked(tx: Tx): Promise<SecretFingerprint[]> {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext('signet.secret_fingerprints'))`);
      return this.all(tx);
    },
    async put(tx: Tx, row: SecretFingerprint): Promise<void> {
      await tx
        .insert(secretFingerprints)
        .values(row)
        .onConflictDoUpdate({ target: secretFingerprints.name, set: { salt: row.salt, fingerprint: row.fingerprint, updatedAt: sql`now()` } });
    },
  };
}

export type SecretFingerprintsRepo = ReturnType<typeof createSecretFingerprintsRepo>;
