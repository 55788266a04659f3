/**
 * The request rows measured against `signet serve`, in one configuration (bench/configs.ts): the reads
 * and creates in both, against the same floors; the link rows (embed and prepare links) on the API
 * node only (minting a link causes no job, so the worker would change nothing but noise).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONFIG_ENV, drainer, placeLabel, type SignetConfig } from './configs.js';
import { measure, measureAmount, measurePaired, type LoadRequest, type Measured, type Row } from './load.js';
import { mcpServed, sentEnvelope, statusRequests } from './mcp.js';
import { byComponent, formatComponents, formatSummary, readProfiles, summarize } from './profile.js';
import { authed, createAndSendBody, createTemplate, expectStatus, fromTemplateBody, makeDrafts, type Client } from './requests.js';
import { createCustomer, startSignet, type DbKind } from './servers.js';

/** A floor kept running after its own row, for the Signet rows measured in turns with it. */
export type Floor = Measured & { row: Row; stop(): Promise<void> };
export type Floors = { read?: Floor; create?: Floor; link?: Floor };

export type BenchSettings = {
  databaseUrl: string | undefined;
  logLevel: string;
  profiling: boolean;
  rounds: number;
  warmup: number;
  duration: number;
  readConnections: number;
  createConnections: number;
  runs: (group: 'read' | 'create' | 'links') => boolean;
};

export type SignetRun = { rows: Row[]; mcpLine: string; profile: string[] };

/** One `signet serve` in `config` for the read, create (and, on an API node, link) groups; optionally profiled. */
export async function signetRoutes(kind: DbKind, config: SignetConfig, floors: Floors, onePage: Uint8Array, s: BenchSettings): Promise<SignetRun> {
  const label = placeLabel(kind, config);
  // BENCH_PROFILE_KEEP=1 leaves the .cpuprofile files for a closer look (their directory is printed).
  const keep = process.env.BENCH_PROFILE_KEEP === '1';
  const profDir = s.profiling ? mkdtempSync(path.join(tmpdir(), `signet-bench-prof-${config}-`)) : undefined;
  if (profDir && keep) process.stderr.write(`  profiles of ${label} kept in ${profDir}\n`);
  const server = await startSignet(kind, s.databaseUrl, {
    env: { LOG_LEVEL: s.logLevel, ...CONFIG_ENV[config] },
    nodeArgs: profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
  });
  // With the worker in process, a create row's window runs until the jobs it caused are done.
  const drain = config === 'start' ? drainer(server.base) : undefined;
  const rows: Row[] = [];
  const windows = { read: [] as [number, number][], create: [] as [number, number][] };
  // Reads cause no job: the worker idles beside them, as it does on a node between sends.
  const readRun = { connections: s.readConnections, warmup: s.warmup, duration: s.duration, pid: server.pid };
  const createRun = { connections: s.createConnections, warmup: s.warmup, duration: s.duration, pid: server.pid, drain };
  const add = (row: Row) => {
    rows.push(row);
    const group = row.group === 'read' ? 'read' : 'create';
    for (const r of row.paired?.rounds ?? [row]) windows[group].push(r.window);
  };
  /** In turns with its floor when there is one (measurePaired), else on its own. */
  const measureRow = (name: string, group: 'read' | 'create' | 'link', req: LoadRequest, floor: Floor | undefined): Promise<Row> => {
    const run = group === 'read' ? readRun : createRun;
    return floor ? measurePaired({ name, group, req, pid: server.pid }, floor, { ...run, rounds: s.rounds }) : measure(name, group, req, run);
  };
  let mcpLine = '';
  try {
    const c: Client = { base: server.base, ...(await createCustomer(server.base)) };
    if (s.runs('read')) {
      add(await measureRow(`Signet GET /v1/account (${label})`, 'read', { url: `${c.base}/v1/account`, headers: authed(c) }, floors.read));
      if (await mcpServed(c.base)) {
        const { rest, mcp } = await statusRequests(c);
        const restRow = await measureRow(`Signet GET /v1/envelopes/{id}/status (${label})`, 'read', rest, floors.read);
        const mcpRow = await measureRow(`Signet MCP tools/call get_envelope_status (${label})`, 'read', mcp, floors.read);
        add(restRow);
        add(mcpRow);
        const r = mcpRow.rps / restRow.rps;
        mcpLine = `  ${label.padEnd(22)} MCP ${mcpRow.rps.toFixed(0)} req/s vs REST ${restRow.rps.toFixed(0)} req/s: ${r.toFixed(3)} (goal >= 0.5: ${r >= 0.5 ? 'met' : 'NOT met'})`;
      } else {
        mcpLine = `  ${label.padEnd(22)} POST /mcp is not served (404): no MCP figures`;
      }
    }
    if (s.runs('create')) {
      const upload = await createAndSendBody(onePage);
      add(await measureRow(`Signet POST /v1/envelopes create-and-send, 1 page, 2 signers (${label})`, 'create', { url: `${c.base}/v1/envelopes`, method: 'POST', body: upload.body, headers: authed(c, { 'content-type': upload.contentType }), idempotencyKey: true }, floors.create));

      const templateId = await createTemplate(c, onePage);
      const fromTemplate: LoadRequest = { url: `${c.base}/v1/templates/${templateId}/from-template`, method: 'POST', body: fromTemplateBody(true), headers: authed(c, { 'content-type': 'application/json' }), idempotencyKey: true };
      const fromRow = await measureRow(`Signet POST /v1/templates/{id}/from-template, sent (${label})`, 'create', fromTemplate, floors.create);
      add(fromRow);

      // Each send uses up a draft: make 1.5 times as many as from-template (the nearest shape) did in
      // the same time, then send a fixed number of them (its rate: that number over the time it took).
      const estimate = Math.max(fromRow.rps, 1);
      const warmupSends = Math.max(s.createConnections, Math.ceil(estimate * s.warmup));
      const measuredSends = Math.min(30_000, Math.max(s.createConnections * 4, Math.ceil(estimate * s.duration * 1.5)));
      process.stderr.write(`  making ${warmupSends + measuredSends} drafts from the template\n`);
      const drafts = await makeDrafts(c, templateId, warmupSends + measuredSends, s.createConnections);
      let next = 0;
      const send: LoadRequest = { url: `${c.base}/v1/envelopes/${drafts[0]}/send`, method: 'POST', headers: authed(c), idempotencyKey: true, nextPath: () => `/v1/envelopes/${drafts[next++]}/send` };
      // The drafts are used up once, so no rounds: the floor runs once, just before.
      const floorNow = floors.create && (await measure(`${floors.create.name}, before the sends`, floors.create.group, floors.create.req, { ...createRun, drain: undefined, pid: floors.create.pid }));
      const sendRow = await measureAmount(`Signet POST /v1/envelopes/{id}/send of a draft (${label})`, 'create', send, warmupSends, measuredSends, s.createConnections, server.pid, drain);
      add(floorNow ? { ...sendRow, floor: floors.create!.row, paired: { ratio: sendRow.rps / floorNow.rps, ratios: [sendRow.rps / floorNow.rps], rounds: [sendRow] } } : sendRow);
      if (next > drafts.length) throw new Error(`sent ${next} requests for ${drafts.length} drafts`);
    }
    if (s.runs('links') && config === 'api') {
      // Both mint a fresh link on every call: the same recipient of a sent envelope, the same draft.
      const sent = await sentEnvelope(c);
      const embed: LoadRequest = { url: `${c.base}/v1/envelopes/${sent}/recipients/1/embed-link`, method: 'POST', headers: authed(c) };
      await expectStatus(await fetch(embed.url, { method: 'POST', headers: embed.headers }), 201, 'POST …/embed-link');
      add(await measureRow(`Signet POST /v1/envelopes/{id}/recipients/1/embed-link (${label})`, 'link', embed, floors.link));
      const [draft] = await makeDrafts(c, await createTemplate(c, onePage), 1, 1);
      const prepare: LoadRequest = { url: `${c.base}/v1/envelopes/${draft}/prepare-link`, method: 'POST', headers: authed(c) };
      await expectStatus(await fetch(prepare.url, { method: 'POST', headers: prepare.headers }), 201, 'POST …/prepare-link');
      add(await measureRow(`Signet POST /v1/envelopes/{id}/prepare-link (${label})`, 'link', prepare, floors.link));
    }
    // The profile is written as the server exits.
    await server.stop();
    const profile: string[] = [];
    if (profDir) {
      if (keep) writeFileSync(path.join(profDir, 'windows.json'), JSON.stringify(rows.map((r) => ({ name: r.name, windows: (r.paired?.rounds ?? [r]).map((x) => x.window) }))));
      const profiles = readProfiles(profDir);
      for (const group of ['read', 'create'] as const) {
        if (windows[group].length) profile.push(formatSummary(`Signet on ${label}, ${group} scenarios (measured seconds only), top 15 by self time`, summarize(profiles, windows[group])));
      }
      // Per create row, by component: what issue 38 asks a create's CPU to be broken into.
      for (const row of rows.filter((r) => r.group === 'create')) {
        profile.push(formatComponents(`${row.name}: busy time by component (samples are wall-clock: on a loaded machine a slow system call weighs more)`, byComponent(profiles, (row.paired?.rounds ?? [row]).map((x) => x.window))));
      }
    }
    return { rows, mcpLine, profile };
  } finally {
    await server.stop();
    if (profDir && !keep) rmSync(profDir, { recursive: true, force: true });
  }
}
