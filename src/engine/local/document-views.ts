import type { DbOrTx } from '../../db/client.js';
import { documentStreamOf, type DocumentStream } from '../engine.js';
import type { StampInput } from '../../pdf/seal.js';
import type { Placement, StampField } from '../../pdf/types.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import { progressKey } from './local-engine.js';
import type { DocumentRow, FieldRow, LocalEngineRepo, RecipientRow } from './local-engine.repo.js';

/** States in which recipients are shown the document as it stands (SEALING: every signer acted, the seal is pending). */
export const LIVE_STATUSES: ReadonlySet<string> = new Set(['PENDING', 'SENT', 'PARTIALLY_SIGNED', 'SEALING']);

/** Signers who signed and approvers who approved: both are recorded as SIGNED. */
export const actedCount = (recipients: Pick<RecipientRow, 'status'>[]) => recipients.filter((r) => r.status === 'SIGNED').length;

/** Which file answers a recipient's document link now, and, when it may have to be rendered, from what. */
export type DocumentView = {
  key: string;
  source?: { originalKey: string; fields: FieldRow[]; hide: Placement[] };
};

export type RenderFn = (input: StampInput, owner: string) => Promise<Uint8Array>;

/**
 * What GET /sign/{token}/document serves (DESIGN §5): the sealed PDF once COMPLETED; before that the
 * document with no marker text and the values of those who acted, rendered once per version in the
 * sandbox and kept in storage (a later view is one storage read). `plan` runs in the caller's short
 * transaction; `open` outside any (storage reads, the render and its write: DESIGN §4.13). A
 * version's file is referenced while it is current (referencedBlobKeys), so the blob sweep collects
 * the superseded ones and all of them once the envelope ends; the purge removes the rest.
 */
export function createDocumentViews(deps: { repo: Pick<LocalEngineRepo, 'fields'>; storage: BlobStorage; render: RenderFn }) {
  const { storage } = deps;
  /** One render per version at a time in this process: concurrent first views share it. */
  const rendering = new Map<string, Promise<Uint8Array | undefined>>();

  async function stampsOf(fields: FieldRow[]): Promise<StampField[]> {
    const stamps: StampField[] = [];
    for (const f of fields) {
      const base = { page: f.page, x: f.x, y: f.y, width: f.width, height: f.height, type: f.type as StampField['type'] };
      if (!f.value?.startsWith('image:')) {
        stamps.push({ ...base, value: f.value });
        continue;
      }
      const image = await storage.get(f.value.slice('image:'.length));
      if (!image) throw new Error(`signature image of field ${f.id} is missing`);
      stamps.push({ ...base, value: null, image });
    }
    return stamps;
  }

  async function render(doc: string, view: Required<DocumentView>): Promise<Uint8Array | undefined> {
    const original = await storage.get(view.source.originalKey);
    if (!original) return undefined;
    const bytes = await deps.render({ original, fields: await stampsOf(view.source.fields), hide: view.source.hide }, doc);
    await storage.put(view.key, bytes);
    return bytes;
  }

  return {
    async plan(tx: DbOrTx, doc: DocumentRow, recipients: RecipientRow[]): Promise<DocumentView> {
      if (doc.status === 'COMPLETED' && doc.signedKey) return { key: doc.signedKey };
      // Recipients were read before the fields: every value of someone counted as acted is committed.
      const acted = new Set(recipients.filter((r) => r.status === 'SIGNED').map((r) => r.id));
      const fields = await deps.repo.fields(tx, doc.id);
      const filled = fields.filter((f) => acted.has(f.recipientId) && f.value !== null);
      const hide = fields.flatMap((f) => (f.hide ? [f.hide] : []));
      // Nothing to hide and nothing to stamp: the prepared document is the document as it stands.
      if (filled.length === 0 && hide.length === 0) return { key: doc.originalKey };
      return { key: progressKey(doc.id, acted.size), source: { originalKey: doc.originalKey, fields: filled, hide } };
    },

    /**
     * The view as a stream: a stored file straight from storage (never held whole), a version rendered
     * now from its bytes; undefined when its files are gone (purged).
     */
    async open(documentId: string, view: DocumentView): Promise<DocumentStream | undefined> {
      const stored = await storage.getStream(view.key);
      if (stored || !view.source) return stored;
      let pending = rendering.get(view.key);
      if (!pending) {
        pending = render(documentId, view as Required<DocumentView>).finally(() => rendering.delete(view.key));
        rendering.set(view.key, pending);
      }
      const rendered = await pending;
      return rendered && documentStreamOf(rendered);
    },
  };
}

export type DocumentViews = ReturnType<typeof createDocumentViews>;
