import { randomBytes } from 'node:crypto';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { writeFileAtomic } from '../storage/atomic-write.js';
import { toMailOptions, type EmailProvider } from './email-provider.js';

/**
 * The built-in mail provider: each message becomes one RFC 5322 file `<timestamp>-<random>.eml` in
 * `dir` (DATA_DIR/outbox), readable by any mail client. Names sort by time; the random part keeps two
 * messages in the same millisecond apart. Files appear atomically, so a watcher never reads half a message.
 */
export function createOutboxEmail(dir: string, from: string): EmailProvider {
  // CRLF line endings as RFC 5322 requires; buffer so the whole message is written in one atomic step.
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

  return {
    async send(msg) {
      const info = await transport.sendMail(toMailOptions(msg, from));
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const file = path.join(dir, `${stamp}-${randomBytes(6).toString('hex')}.eml`);
      await writeFileAtomic(file, info.message as Buffer);
      return { messageId: info.messageId };
    },
    async close() {
      transport.close();
    },
  };
}
