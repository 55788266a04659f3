import type { DbOrTx } from '../../db/client.js';
import { documentStreamOf, type DocumentStream, type SigningEngine } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import type { EnvelopeRow } from './envelopes.repo.js';

export type DownloadVersion = 'signed' | 'original';

/** The engine's document a download of `version` serves, and its file name; refused when there is none (yet). */
export function downloadTarget(envelope: EnvelopeRow, version: DownloadVersion): { engineEnvelopeId: string; filename: string } {
  if (envelope.purgedAt) throw new AppError('DOCUMENT_PURGED', 'The documents passed their retention date and were deleted');
  const base = (envelope.title ?? 'envelope').replace(/[^\w.-]+/g, '_').slice(0, 80) || 'envelope';
  if (version === 'original') return { engineEnvelopeId: envelope.engineEnvelopeId, filename: `${base}.pdf` };
  if (envelope.status !== 'COMPLETED') throw new AppError('ENVELOPE_NOT_COMPLETE', `The envelope is ${envelope.status}; the signed PDF exists once it is COMPLETED`);
  return { engineEnvelopeId: envelope.engineEnvelopeId, filename: `${base}-signed.pdf` };
}

/** The document's bytes, read whole. */
export const enginePdf = (engine: SigningEngine, db: DbOrTx, engineEnvelopeId: string, version: DownloadVersion): Promise<Uint8Array> =>
  version === 'original' ? engine.originalPdf(db, engineEnvelopeId) : engine.signedPdf(db, engineEnvelopeId);

/**
 * The document as a stream from its store, so a download holds a few chunks of it rather than the
 * file (four concurrent downloads of a 25 MiB PDF held over 100 MiB read whole); read whole and
 * wrapped for an engine that cannot stream.
 */
export async function openEnginePdf(engine: SigningEngine, db: DbOrTx, engineEnvelopeId: string, version: DownloadVersion): Promise<DocumentStream> {
  return engine.openPdf ? engine.openPdf(db, engineEnvelopeId, version) : documentStreamOf(await enginePdf(engine, db, engineEnvelopeId, version));
}
