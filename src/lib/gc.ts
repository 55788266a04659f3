import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Collect = (options?: { type?: 'major' | 'minor'; execution?: 'sync'; flavor?: 'regular' | 'last-resort' }) => void;
let collect: Collect | undefined;

/**
 * Runs V8's garbage collector now, in the calling thread. For the few places where waiting for V8 to
 * choose the moment costs megabytes: V8 frees a Buffer's memory only when its small JS object is
 * collected, and it schedules collections by how much the JS heap grows, letting up to 64 MB of
 * Buffer memory pile up in between. A 25 MB upload streamed through in chunks, or a 25 MB file read
 * for one job, would stay resident that long.
 *
 * The collector is V8's `gc` extension, taken from one context created while --expose-gc is set;
 * the flag is unset at once, so no other context (a worker's, a vm's) sees a `gc` global.
 */
export function collectGarbage(type: 'major' | 'minor' | 'shrink'): void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    try {
      collect = runInNewContext('gc') as Collect;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  // A major collection is asked for without options: with them, V8 keeps what the calling frames
  // might still point at (seen: the last job's 25 MB input survived every collection).
  if (type === 'minor') collect({ type });
  // V8's collection for memory pressure: several rounds, old space compacted, the young generation
  // shrunk back to its smallest (it stays at the size the busiest moment grew it to otherwise).
  else if (type === 'shrink') collect({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  else collect();
}
