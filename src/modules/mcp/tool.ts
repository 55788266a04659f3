import type { z } from 'zod';
import type { RequestContext } from '../../context.js';
import type { Db, Tx } from '../../db/client.js';
import type { BillableOperation } from '../../lib/prices.js';
import type { InlineBudget } from './inline-budget.js';

/**
 * What a tool's `run` gets: who calls (the same RequestContext REST builds), the database for reads,
 * and `mutate`, which runs a state change exactly as REST's commitMutation does: under the call's
 * `idempotencyKey` (reserved first; a replay returns the stored result without running `work`), in one
 * transaction with the charge and the audit row, and with an x402 payment settled just before it opens.
 * The key is reserved before `run` starts, so a replay runs nothing of the tool (no planning, no balance
 * check). A mutating tool returns what its `mutate` returns (shape the answer inside the work, as REST's
 * commitMutation does): that value is what the key stores and every replay answers. One mutate per call.
 */
export type ToolContext = {
  ctx: RequestContext;
  db: Db;
  mutate<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** The document bytes this HTTP request's answer may still inline, shared by every call of a batch. */
  inline: InlineBudget;
};

/**
 * One MCP tool: a thin adapter over a service, never a repo. `input` and `output` are zod object
 * shapes (the SDK's inputSchema/outputSchema). A billable tool (`price`) must take `idempotencyKey`
 * in its input; a mutating one (`mutates`) accepts it. A failure is thrown as an AppError: the endpoint
 * turns it into a result with isError and {code, error}.
 */
export type ToolDefinition<I extends z.ZodRawShape = z.ZodRawShape, O extends z.ZodRawShape = z.ZodRawShape> = {
  name: string;
  title: string;
  /** Written for a model: what it does, what it costs, which error codes it returns. */
  description: string;
  input: I;
  output: O;
  /** The REST price it charges (same operation, same amount); undefined for free tools. */
  price?: BillableOperation;
  /**
   * When the arguments decide what the call is charged as (a draft is not charged): that operation, or
   * undefined for none (an x402 caller then pays X402_MIN_PRICE). Reads the arguments as sent, unchecked.
   */
  x402Price?(args: Record<string, unknown>): BillableOperation | undefined;
  /** Changes state (x402 pays X402_MIN_PRICE for an unpriced mutation; reads are refused to x402-only callers). */
  mutates: boolean;
  run(tc: ToolContext, args: z.infer<z.ZodObject<I>>): Promise<z.infer<z.ZodObject<O>>>;
  /** A short text rendering of the result for clients that show text only. */
  text(result: z.infer<z.ZodObject<O>>): string;
};

export const defineTool = <I extends z.ZodRawShape, O extends z.ZodRawShape>(tool: ToolDefinition<I, O>): ToolDefinition<I, O> => tool;
