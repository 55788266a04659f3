import { openAsBlob } from 'node:fs';
import { Readable } from 'node:stream';

/** What an upload may be given as: a file path, bytes, a Blob, or a Node or web stream. */
export type FileInput = string | URL | Uint8Array | ArrayBuffer | Blob | Readable | ReadableStream<Uint8Array>;

/**
 * A Blob of the upload. A path is opened lazily (openAsBlob); a stream is read to the end first, so a
 * retry can send the same bytes again.
 */
export async function toBlob(file: FileInput, type = 'application/pdf'): Promise<Blob> {
  if (typeof file === 'string' || file instanceof URL) return openAsBlob(file, { type });
  if (file instanceof Blob) return file;
  if (file instanceof Uint8Array || file instanceof ArrayBuffer) return new Blob([file as Uint8Array<ArrayBuffer>], { type });
  const stream = file instanceof Readable ? file : Readable.fromWeb(file as never);
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Uint8Array));
  return new Blob(chunks as Uint8Array<ArrayBuffer>[], { type });
}

const nameOf = (file: FileInput) => (typeof file === 'string' ? file.split(/[\\/]/).pop() || 'document.pdf' : 'document.pdf');

/** A multipart form: the file under `part`, and the JSON payload as an application/json part. */
export async function multipart(part: string, file: FileInput, payload?: unknown): Promise<FormData> {
  const form = new FormData();
  form.append(part, await toBlob(file), nameOf(file));
  if (payload !== undefined) form.append('payload', new Blob([JSON.stringify(payload)], { type: 'application/json' }));
  return form;
}
