/**
 * The document bytes one POST /mcp answer may carry inline (DESIGN §4.19: every answer has a size
 * budget; beyond it, a link). One budget per HTTP request, shared by every tools/call of a batch, so a
 * batch of downloads cannot multiply it: the SDK answers a batch as one JSON string, which must stay far
 * below V8's string limit and the memory of a node.
 *
 * The calls that inline take turns: each loads its document only once the earlier ones have answered,
 * so a request holds at most one document it has not yet inlined or dropped, however large its batch.
 */
export function inlineBudget(maxBytes: number) {
  let left = maxBytes;
  let turn: Promise<unknown> = Promise.resolve();
  return {
    /** Runs `work` after the request's earlier turns; its `fits(bytes)` takes that much of the budget when it is left. */
    inTurn<T>(work: (fits: (bytes: number) => boolean) => Promise<T>): Promise<T> {
      const run = turn.then(() => work((bytes) => bytes <= left && ((left -= bytes), true)));
      turn = run.catch(() => undefined);
      return run;
    },
  };
}

export type InlineBudget = ReturnType<typeof inlineBudget>;
