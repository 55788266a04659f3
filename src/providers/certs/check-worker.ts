import { parentPort, workerData } from 'node:worker_threads';
import { ConfigError } from '../../config-error.js';
import { checkSealingCertificate, type SealCheckInput } from './check.js';
import { loadSigner } from './signer.js';

// The start-up check of the sealing certificate, away from the main thread (check.ts: checkInWorker).
const input = workerData as SealCheckInput;
try {
  parentPort!.postMessage({ outcome: await checkSealingCertificate(await loadSigner(input), input) });
} catch (err) {
  parentPort!.postMessage({ error: err instanceof Error ? err.message : String(err), config: err instanceof ConfigError });
}
