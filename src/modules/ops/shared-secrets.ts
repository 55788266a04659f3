import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../../config-error.js';
import type { Db } from '../../db/client.js';
import type { SecretFingerprint, SecretFingerprintsRepo } from './secret-fingerprints.repo.js';

/** A secret every node must hold the same: the operator token, the wallet JWT key, the signing-link key. */
export type SharedSecret = { name: string; value: string };

const fingerprint = (value: string, salt: string) =>
  new Promise<Buffer>((resolve, reject) => scrypt(value, salt, 32, (err, key) => (err ? reject(err) : resolve(key))));

async function sameValue(value: string, row: SecretFingerprint): Promise<boolean> {
  const recorded = Buffer.from(row.fingerprint, 'hex');
  const ours = await fingerprint(value, row.salt);
  return recorded.length === ours.length && timingSafeEqual(recorded, ours);
}

async function newRow(name: string, value: string): Promise<SecretFingerprint> {
  const salt = randomBytes(16).toString('hex');
  return { name, salt, fingerprint: (await fingerprint(value, salt)).toString('hex') };
}

/**
 * Refuses to start a node whose secret was generated in (or read from) its own DATA_DIR when another
 * node on the same database uses another value. Each node writes a fingerprint of each shared secret
 * (`secret_fingerprints`): nodes that generated their own would otherwise start fine and then refuse
 * each other's signing links, wallet sessions and operator token. A value given in the environment is
 * the operator's choice and always wins (a rotation replaces the fingerprint); a node whose generated
 * value differs from it must be given that value too.
 */
export async function checkSharedSecrets(
  deps: { db: Db; repo: SecretFingerprintsRepo },
  secrets: SharedSecret[],
  /** The secrets of `secrets` that came from DATA_DIR, with their files (Config.dataDirSecrets). */
  fromDataDir: readonly { name: string; file: string }[],
): Promise<void> {
  // The fingerprints are computed outside any transaction (scrypt is slow on purpose); the writes then
  // go in one short locked transaction, only if nobody changed the rows meanwhile, else all over again.
  for (let round = 0; round < 5; round++) {
    const seen = await deps.repo.all(deps.db);
    const recorded = new Map(seen.map((r) => [r.name, r]));
    const differing: { name: string; file: string }[] = [];
    const writes: SecretFingerprint[] = [];
    for (const { name, value } of secrets) {
      const row = recorded.get(name);
      if (row && (await sameValue(value, row))) continue;
      const file = fromDataDir.find((s) => s.name === name);
      if (row && file) differing.push(file);
      else writes.push(await newRow(name, value));
    }
    if (differing.length) throw refusal(differing);
    if (!writes.length) return;
    const written = await deps.db.transaction(async (tx) => {
      if (JSON.stringify(await deps.repo.allLocked(tx)) !== JSON.stringify(seen)) return false;
      for (const row of writes) await deps.repo.put(tx, row);
      return true;
    });
    if (written) return;
  }
  throw new Error('could not record the shared secrets: other nodes kept changing theirs');
}

function refusal(differing: { name: string; file: string }[]): ConfigError {
  const names = differing.map((d) => d.name).join(', ');
  return new ConfigError(
    `Invalid configuration: ${names}: this node generated ${differing.length > 1 ? 'them' : 'it'} in its DATA_DIR (${differing.map((d) => d.file).join(', ')}), ` +
      `but another node on this database uses another value, and each node would refuse the other's signing links, wallet sessions and operator calls. ` +
      `Set ${names} to the same values on every node (the first node's DATA_DIR files hold its values). ` +
      `If no other node runs and this DATA_DIR is new, setting new values ends the signing links and sessions made with the old ones.`,
  );
}
