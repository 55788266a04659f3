import type { AccountService } from '../../account/account.service.js';
import { ZAccount, ZUsageEntry } from '../../account/account.schemas.js';
import { defineTool, type ToolDefinition } from '../tool.js';
import { countText, pageOf, pageOutput, pagingInput, toPaging } from './tool-shapes.js';

export type AccountToolDeps = { account: Pick<AccountService, 'getAccount' | 'listUsage'> };

/** The account area as MCP tools: the same reads as GET /v1/account and /v1/account/usage. */
export function accountTools(deps: AccountToolDeps): ToolDefinition[] {
  const { account } = deps;
  return [
    defineTool({
      name: 'get_account',
      title: 'Get the account',
      description:
        'The account behind your credential, with its prepaid balance. Fields: id, email, name, mode (live or test), balance (creditsCents, creditsFormatted, balanceMicros), the sandbox counters of test mode, and for a wallet its address and total spending. Free. Errors: UNAUTHORIZED.',
      input: {},
      output: ZAccount.shape,
      mutates: false,
      run: (tc) => account.getAccount(tc.db, tc.ctx.actor),
      text: (a) => `Account ${a.accountId} (${a.email}, ${a.mode} mode): balance ${a.creditsFormatted}; sandbox ${a.sandboxUsed}/${a.sandboxLimit}`,
    }),

    defineTool({
      name: 'get_account_usage',
      title: 'List account usage',
      description:
        'Lists the ledger entries of the account, most recent first. Debits (each charge, with its envelope), credits (top-ups) and refunds, in cents and micros, with the on-chain txHash of x402 payments; test mode has none. Free. Errors: VALIDATION_ERROR (bad paging).',
      input: { ...pagingInput },
      output: pageOutput(ZUsageEntry),
      mutates: false,
      async run(tc, args) {
        const paging = toPaging(args);
        return pageOf(paging, await account.listUsage(tc.db, tc.ctx.actor, paging));
      },
      text: (p) => [`Usage ${countText(p)}`, ...p.data.map((u) => `- ${u.createdAt} ${u.direction} ${u.amountFormatted}: ${u.description}`)].join('\n'),
    }),
  ];
}
