import { randomBytes } from 'node:crypto';
import path from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { writeFileAtomic } from '../storage/atomic-write.js';
import { toMailOptions, type EmailProvider } from './email-provider.js';
import { composeMessage } from './mime.js';

/**
 * The built-in mail provider: each message becomes one RFC 5322 file `<timestamp>-<random>.eml` in
 * `dir` (DATA_DIR/outbox), readable by any mail client. Names sort by time; the random part keeps two
 * messages in the same millisecond apart. Files appear atomically, so a watcher never reads half a message.
 */
export function createOutboxEmail(dir: string, from: string): EmailProvider {
  // CRLF line endings as RFC 5322 requires; buffer so the whole message is written in one atomic step.
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

  const streamed = async (options: SendMailOptions) => {
    const info = await transport.sendMail(options);
    return { message: info.message as Buffer, messageId: info.messageId };
  };

  return {
    async send(msg) {
      const options = { ...toMailOptions(msg, from), newline: 'windows' as const };
      // Built in memory when every part is (mime.ts); streamed through nodemailer otherwise.
      const { message, messageId } = composeMessage(options) ?? (await streamed(options));
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const file = path.join(dir, `${stamp}-${randomBytes(6).toString('hex')}.eml`);
      await writeFileAtomic(file, message);
      return { messageId };
    },
    async close() {
      transport.close();
    },
  };
}
