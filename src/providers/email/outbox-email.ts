import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { SendMailOptions, Transporter } from 'nodemailer';
import { writeFileAtomic } from '../storage/atomic-write.js';
import { toMailOptions, type EmailProvider } from './email-provider.js';

/**
 * The built-in mail provider: each message becomes one RFC 5322 file `<timestamp>-<random>.eml` in
 * `dir` (DATA_DIR/outbox), readable by any mail client. Names sort by time; the random part keeps two
 * messages in the same millisecond apart. Files appear atomically, so a watcher never reads half a message.
 */
export function createOutboxEmail(dir: string, from: string): EmailProvider {
  // nodemailer's modules load with the first message, not at start: some 4 MiB of heap a server that
  // sends nothing would hold for ever (issue 38).
  let mime: Promise<typeof import('./mime.js')> | undefined;
  let transport: Promise<Transporter> | undefined;

  const streamed = async (options: SendMailOptions) => {
    // CRLF line endings as RFC 5322 requires; buffer so the whole message is written in one atomic step.
    transport ??= import('nodemailer').then((m) => m.default.createTransport({ streamTransport: true, buffer: true, newline: 'windows' }));
    const info = await (await transport).sendMail(options);
    return { message: info.message as Buffer, messageId: info.messageId };
  };

  return {
    async send(msg) {
      const options = { ...toMailOptions(msg, from), newline: 'windows' as const };
      // Built in memory when every part is (mime.ts); streamed through nodemailer otherwise.
      const { composeMessage } = await (mime ??= import('./mime.js'));
      const { message, messageId } = composeMessage(options) ?? (await streamed(options));
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const file = path.join(dir, `${stamp}-${randomBytes(6).toString('hex')}.eml`);
      await writeFileAtomic(file, message);
      return { messageId };
    },
    async close() {
      (await transport)?.close();
    },
  };
}
