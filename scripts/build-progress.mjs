// `npm start` compiles before it serves: on a fresh clone tsc is silent for about a minute, so say so.
// `before` prints what is happening and notes the time; `after` says how long it took. Costs ~50 ms.
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

const dist = path.resolve(process.env.SIGNET_DIST_DIR ?? 'dist');
const stamp = path.join(dist, '.build-started');
if (process.argv[2] === 'before') {
  const first = !existsSync(path.join(dist, '.built'));
  console.log(first ? 'Building Signet (first run: about a minute)…' : 'Building Signet…');
  mkdirSync(dist, { recursive: true });
  writeFileSync(stamp, String(Date.now()));
} else {
  const started = existsSync(stamp) ? Number(readFileSync(stamp, 'utf8')) : NaN;
  console.log(Number.isFinite(started) ? `Built in ${((Date.now() - started) / 1000).toFixed(1)} s.` : 'Built.');
}
