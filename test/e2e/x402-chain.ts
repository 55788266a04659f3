import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { registerExactEvmScheme } from '@x402/evm/exact/facilitator';
import { createPublicClient, createWalletClient, http, publicActions, type Hex, type Abi } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { freePort } from './free-port.js';

/**
 * A real local chain for the x402 tests: anvil (from its npm package), an EIP-3009 token compiled from
 * test/fixtures/x402/TestUsd.sol with solc at test time, Multicall3's tryAggregate at its canonical
 * address (the facilitator diagnoses failed simulations with it), and a facilitator from
 * @x402/evm's exact scheme served over HTTP. Nothing of the protocol is mocked.
 */

/** anvil's well-known dev keys: 0 deploys and runs the facilitator, 1 receives, 2 and 3 pay. */
export const ANVIL_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1d1706367c2e68ca870fc3faf13e4ad5f8d57',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
] as const satisfies readonly Hex[];

export const NETWORK = 'eip155:31337';
export const TOKEN_NAME = 'Test USD';
export const TOKEN_VERSION = '2';
const MULTICALL3 = '0xcA11bde05977b3631167028862bE2a173976CA11';

type Compiled = { abi: Abi; bytecode: Hex; deployed: Hex };

function compile(): { token: Compiled; multicall: Compiled } {
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
  const source = readFileSync(new URL('../fixtures/x402/TestUsd.sol', import.meta.url), 'utf8');
  const input = {
    language: 'Solidity',
    sources: { 'TestUsd.sol': { content: source } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } } },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === 'error');
  if (errors.length) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join('\n'));
  const pick = (name: string): Compiled => {
    const c = out.contracts['TestUsd.sol'][name];
    return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}`, deployed: `0x${c.evm.deployedBytecode.object}` };
  };
  return { token: pick('TestUsd'), multicall: pick('TryAggregate') };
}

export type FacilitatorMode = 'normal' | 'down' | 'refuse-settle' | 'broke-settle' | 'slow-settle' | 'delay-settle' | 'pending-settle' | 'revert-settle' | 'hang-settle' | 'repeat-settle';

/** How long `delay-settle` waits before it settles: about the receipt time of a real L2. */
export const SETTLE_DELAY_MS = 1500;

export type Chain = {
  rpcUrl: string;
  token: Hex;
  tokenAbi: Abi;
  payTo: Hex;
  facilitatorUrl: string;
  /**
   * normal; down (answers 503 to everything); refuse-settle (verify passes, settle answers a failure);
   * broke-settle (verify passes, settle answers that the payer's funds are gone);
   * slow-settle (the transfer lands on-chain, the answer comes 3 s later);
   * delay-settle (waits SETTLE_DELAY_MS, then settles and answers);
   * pending-settle (the transfer lands, the answer is `settlement_pending` with its hash, as @x402/evm
   * answers when its receipt wait fails; the same answer again for the same authorization);
   * revert-settle (nothing lands; the answer is a failure naming a transaction, as for one that reverted);
   * hang-settle (the transfer lands, no answer ever comes);
   * repeat-settle (settles nothing and answers success with the hash of the last settle, as a
   * facilitator that is idempotent on settle, or lies, would).
   */
  setFacilitatorMode(mode: FacilitatorMode): void;
  /** Settle requests the facilitator received and has not answered yet. */
  settlesInFlight(): number;
  balanceOf(address: Hex): Promise<bigint>;
  mint(address: Hex, amount: bigint): Promise<void>;
  close(): Promise<void>;
};

export async function startChain(): Promise<Chain> {
  const port = await freePort();
  const rpcUrl = `http://127.0.0.1:${port}`;
  const bin = createRequire(import.meta.url).resolve('@foundry-rs/anvil-linux-amd64/bin/anvil');
  const anvil: ChildProcess = spawn(bin, ['--host', '127.0.0.1', '--port', String(port), '--chain-id', '31337', '--silent'], { stdio: 'ignore' });
  // anvil mines each transaction at once: poll for receipts every 50 ms, not viem's default 4 s.
  const publicClient = createPublicClient({ chain: foundry, transport: http(rpcUrl), pollingInterval: 50 });
  for (let i = 0; ; i++) {
    try {
      await publicClient.getChainId();
      break;
    } catch (err) {
      if (i > 100) throw err;
      await sleep(100);
    }
  }
  const { token: tokenArtifact, multicall } = compile();
  const deployer = createWalletClient({ account: privateKeyToAccount(ANVIL_KEYS[0]), chain: foundry, transport: http(rpcUrl), pollingInterval: 50 }).extend(publicActions);
  const deployHash = await deployer.deployContract({ abi: tokenArtifact.abi, bytecode: tokenArtifact.bytecode, args: [TOKEN_NAME, TOKEN_VERSION] });
  const token = (await deployer.waitForTransactionReceipt({ hash: deployHash })).contractAddress!;
  await deployer.request({ method: 'anvil_setCode' as never, params: [MULTICALL3, multicall.deployed] as never });

  const facilitator = new x402Facilitator();
  registerExactEvmScheme(facilitator, { signer: toFacilitatorEvmSigner({ ...deployer, address: deployer.account.address } as never), networks: NETWORK });
  let mode: FacilitatorMode = 'normal';
  let inFlight = 0;
  let lastTransaction = '';
  const pending = new Map<string, unknown>();
  // One settle at a time: the facilitator's account sends every transfer, and concurrent sends would
  // pick the same account nonce. A real facilitator manages its own nonces.
  let queue: Promise<unknown> = Promise.resolve();
  const settleInTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const turn = queue.then(work);
    queue = turn.catch(() => undefined);
    return turn;
  };
  const settle = (...args: Parameters<x402Facilitator['settle']>) =>
    settleInTurn(async () => {
      const result = await facilitator.settle(...args);
      if (result.success) lastTransaction = result.transaction;
      return result;
    });
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const send = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
      };
      try {
        if (mode === 'down') return send(503, { error: 'facilitator is down' });
        if (req.method === 'GET' && req.url === '/supported') return send(200, facilitator.getSupported());
        const { paymentPayload, paymentRequirements } = JSON.parse(body || '{}');
        if (req.url === '/verify') return send(200, await facilitator.verify(paymentPayload, paymentRequirements));
        if (req.url === '/settle') {
          inFlight++;
          res.once('close', () => inFlight--);
          if (mode === 'refuse-settle') return send(200, { success: false, errorReason: 'transaction_failed', transaction: '', network: NETWORK });
          if (mode === 'broke-settle') return send(200, { success: false, errorReason: 'invalid_exact_evm_insufficient_balance', transaction: '', network: NETWORK });
          if (mode === 'revert-settle') return send(200, { success: false, errorReason: 'invalid_transaction_state', transaction: `0x${randomBytes(32).toString('hex')}`, network: NETWORK });
          if (mode === 'repeat-settle') return send(200, { success: true, transaction: lastTransaction, network: NETWORK, payer: paymentPayload.payload.authorization.from });
          if (mode === 'delay-settle') await sleep(SETTLE_DELAY_MS);
          const nonce: string = paymentPayload.payload.authorization.nonce;
          if (mode === 'pending-settle' && pending.has(nonce)) return send(200, pending.get(nonce));
          const result = await settle(paymentPayload, paymentRequirements);
          if (mode === 'slow-settle') await sleep(3000);
          if (mode === 'hang-settle') return;
          if (mode === 'pending-settle' && result.success) {
            const answer = { success: false, errorReason: 'settlement_pending', errorMessage: 'timed out waiting for the receipt', transaction: result.transaction, network: NETWORK, payer: result.payer };
            pending.set(nonce, answer);
            return send(200, answer);
          }
          return send(200, result);
        }
        send(404, { error: 'not found' });
      } catch (err) {
        send(500, { error: (err as Error).message });
      }
    });
  });
  const facilitatorPort = await freePort();
  await new Promise<void>((resolve) => server.listen(facilitatorPort, '127.0.0.1', resolve));

  const balanceOf = async (address: Hex) => (await publicClient.readContract({ address: token, abi: tokenArtifact.abi, functionName: 'balanceOf', args: [address] })) as bigint;
  return {
    rpcUrl,
    token,
    tokenAbi: tokenArtifact.abi,
    payTo: privateKeyToAccount(ANVIL_KEYS[1]).address,
    facilitatorUrl: `http://127.0.0.1:${facilitatorPort}`,
    setFacilitatorMode: (m) => void (mode = m),
    settlesInFlight: () => inFlight,
    balanceOf,
    async mint(address, amount) {
      const hash = await deployer.writeContract({ address: token, abi: tokenArtifact.abi, functionName: 'mint', args: [address, amount] });
      await deployer.waitForTransactionReceipt({ hash });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      anvil.kill('SIGTERM');
    },
  };
}
