import { writeSync as fsWriteSync } from 'node:fs';

/** How long to wait before writing again when the descriptor is full (a non-blocking pipe): EAGAIN. */
const RETRY_MS = 10;

export type LogDestination = { write(line: string): void; flush(): void };

/**
 * Where the log lines go: a file descriptor (stdout), written synchronously, once per turn of the
 * event loop with every line of that turn. pino's default destination wrote each line through the
 * thread pool (an fs.write, and a thread woken and waking the loop back each time): under load that
 * was a write and about three futex calls for every three requests, several percent of a cheap read's
 * CPU. Here a busy turn's access lines share one write(2) and no thread; a quiet server's line is
 * written at the end of the turn that logged it, as promptly as before. Node writes stdout to a file
 * or a pipe synchronously too. What is still buffered is written when the process exits.
 */
export function turnBufferedDestination(fd: number, writeSync: (fd: number, bytes: Uint8Array) => number = fsWriteSync): LogDestination {
  let pending = '';
  // What a partial write left, written before anything newer.
  let rest: Buffer | undefined;
  let scheduled = false;
  let closed = false;

  function flush(): void {
    scheduled = false;
    if (closed || (pending === '' && !rest)) return;
    const text = Buffer.from(pending);
    const bytes = rest ? Buffer.concat([rest, text]) : text;
    pending = '';
    rest = undefined;
    let offset = 0;
    while (offset < bytes.length) {
      try {
        offset += writeSync(fd, bytes.subarray(offset));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') {
          rest = bytes.subarray(offset);
          schedule(RETRY_MS);
          return;
        }
        // The reader went away (EPIPE), or the descriptor is unusable: logging stops and the server goes
        // on (this runs in its own turn, where a throw would end the process for the sake of a log line).
        closed = true;
        return;
      }
    }
  }

  function schedule(delayMs = 0): void {
    if (scheduled) return;
    scheduled = true;
    if (delayMs > 0) setTimeout(flush, delayMs).unref();
    else setImmediate(flush).unref();
  }

  process.once('exit', flush);
  return {
    write(line: string): void {
      if (closed) return;
      pending += line;
      schedule();
    },
    flush,
  };
}

let stdout: LogDestination | undefined;

/** The process's one stdout destination: every container of a process (tests build many) shares it. */
export function stdoutLogDestination(): LogDestination {
  return (stdout ??= turnBufferedDestination(1));
}
