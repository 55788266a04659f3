import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { x402Client } from '@x402/fetch';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { NETWORK, TOKEN_NAME, TOKEN_VERSION, type Chain } from './x402-chain.js';

/** The X402_* environment of an app paid on `chain`; X402_RPC_URL lets its settlement sweep read the chain. */
export const x402Env = (chain: Chain, extra: Record<string, string> = {}): Record<string, string> => ({
  X402_FACILITATOR_URL: chain.facilitatorUrl,
  X402_NETWORK: NETWORK,
  X402_ASSET: chain.token,
  X402_PAY_TO: chain.payTo,
  X402_ASSET_NAME: TOKEN_NAME,
  X402_ASSET_VERSION: TOKEN_VERSION,
  X402_RPC_URL: chain.rpcUrl,
  ...extra,
});

/** Wallets that pay on `chain`, as an agent with @x402/fetch's client does. */
export function x402Payers(chain: Chain) {
  function client(account: PrivateKeyAccount): x402Client {
    // The test token is no default asset: the client's spend controls must be told it may pay in it.
    return x402Client.fromConfig({
      schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(account) }],
      spendControls: { allowedAssets: [{ network: NETWORK, asset: chain.token }] },
    });
  }
  return {
    client,
    /** A new wallet holding `amount` units of the token (6 decimals: 1 unit = 1 micro). */
    async funded(amount = 1_000_000n): Promise<PrivateKeyAccount> {
      const account = privateKeyToAccount(generatePrivateKey());
      if (amount > 0n) await chain.mint(account.address, amount);
      return account;
    },
    /** A PAYMENT-SIGNATURE header paying the requirements a 402 announced. */
    async sign(account: PrivateKeyAccount, required: PaymentRequired): Promise<string> {
      return encodePaymentSignatureHeader(await client(account).createPaymentPayload(required));
    },
  };
}
