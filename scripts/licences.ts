/**
 * The licences of everything Signet ships at run time: the production dependency tree in node_modules
 * (package.json `license`) and the font files drawn into sealed PDFs or served to signing pages.
 * `npx tsx scripts/licences.ts` rewrites docs/licences.md; test/licences.test.ts checks that every
 * licence allows redistribution under Apache-2.0 and that the file is current.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const LICENCES_MD = path.join(ROOT, 'docs', 'licences.md');

/** Permissive licences (and font licences) whose terms allow shipping them inside an Apache-2.0 work. */
export const ALLOWED = new Set([
  'MIT', 'MIT-0', 'ISC', 'BSD-2-Clause', 'BSD-3-Clause', '0BSD', 'Apache-2.0', 'BlueOak-1.0.0', 'CC0-1.0', 'CC-BY-4.0',
  'Unlicense', 'Python-2.0', 'OFL-1.1', 'Bitstream-Vera', 'Zlib', 'WTFPL',
]);

/**
 * Packages whose package.json has no SPDX identifier, and what their LICENSE file says (read by a
 * person, recorded here with the version read: a new version must be read again).
 */
const DECLARED: Record<string, { version: string; license: string; why: string }> = {
  '@documenso/sdk-typescript': { version: '0.9.1', license: 'MIT', why: 'no license field; LICENSE: MIT License, Copyright (c) 2025 documenso' },
  'dejavu-fonts-ttf': { version: '2.37.3', license: 'Bitstream-Vera', why: 'LICENSE: Bitstream Vera fonts licence, DejaVu changes in the public domain' },
};

/** Font files Signet embeds in PDFs or serves to browsers, with the licence of the files themselves (a package's own licence may cover only its code). */
export const FONTS = [
  { files: 'dejavu-fonts-ttf/ttf/DejaVu*.ttf', use: 'names and values drawn on sealed PDFs (src/pdf/fonts.ts)', license: 'Bitstream-Vera' },
  { files: '@expo-google-fonts/noto-sans-sc/400Regular/NotoSansSC_400Regular.ttf', use: 'CJK text on sealed PDFs (src/pdf/fonts.ts)', license: 'OFL-1.1' },
  { files: 'pdfjs-dist/standard_fonts/Foxit*.pfb', use: 'the signing page renders PDFs with pdf.js (LICENSE_FOXIT)', license: 'BSD-3-Clause' },
  { files: 'pdfjs-dist/standard_fonts/LiberationSans-*.ttf', use: 'the signing page renders PDFs with pdf.js (LICENSE_LIBERATION)', license: 'OFL-1.1' },
] as const;

export type Row = { name: string; version: string; license: string };

type Manifest = { name: string; version: string; license?: string | { type: string }; licenses?: { type: string }[]; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };

/** Where Node would find `name` from `dir`: its node_modules, then each parent's. */
function resolvePackage(name: string, dir: string): string | undefined {
  for (let d = dir; ; d = path.dirname(d)) {
    const candidate = path.join(d, 'node_modules', name);
    if (existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (d === ROOT || path.dirname(d) === d) return undefined;
  }
}

function licenceOf(m: Manifest): string {
  const declared = DECLARED[m.name];
  if (declared && declared.version === m.version) return declared.license;
  if (typeof m.license === 'string') return m.license;
  if (m.license?.type) return m.license.type;
  return m.licenses?.map((l) => l.type).join(' OR ') ?? 'UNKNOWN';
}

/** Every package reachable from the root's dependencies (and their installed optional dependencies), once per name and version. */
export function productionTree(): Row[] {
  const root = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;
  const seen = new Map<string, Row>();
  const visit = (deps: string[], from: string, optional: Set<string>) => {
    for (const name of deps) {
      const dir = resolvePackage(name, from);
      if (!dir) {
        if (optional.has(name)) continue;
        throw new Error(`${name} (needed by ${path.relative(ROOT, from) || 'the root'}) is not installed`);
      }
      const m = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest;
      const key = `${m.name}@${m.version}`;
      if (seen.has(key)) continue;
      seen.set(key, { name: m.name, version: m.version, license: licenceOf(m) });
      const opt = new Set(Object.keys(m.optionalDependencies ?? {}));
      visit([...Object.keys(m.dependencies ?? {}), ...opt], dir, opt);
    }
  };
  // The root's optional dependencies are Node.js itself, one package per platform (MIT; only this
  // machine's is installed): left out so the list is the same on every machine.
  visit(Object.keys(root.dependencies ?? {}), ROOT, new Set());
  return [...seen.values()].sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
}

/** An SPDX expression is allowed when some OR-branch has every AND-part allowed. */
export function allowed(expression: string): boolean {
  return expression
    .replace(/[()]/g, '')
    .split(/\s+OR\s+/i)
    .some((branch) => branch.split(/\s+AND\s+/i).every((id) => ALLOWED.has(id.trim())));
}

export function renderLicences(rows: Row[]): string {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.license, (counts.get(r.license) ?? 0) + 1);
  return [
    '# Licences',
    '',
    'Signet is licensed under the [Apache License 2.0](../LICENSE). Everything it ships at run time is',
    'under a licence that allows redistribution inside an Apache-2.0 work. This file is generated by',
    '`npx tsx scripts/licences.ts` and checked by `test/licences.test.ts`.',
    '',
    'Node.js, which `npm install` brings as the `node-<platform>` optional dependencies, is MIT.',
    '',
    '## Fonts',
    '',
    '| files (in node_modules) | used for | licence |',
    '|---|---|---|',
    ...FONTS.map((f) => `| \`${f.files}\` | ${f.use} | ${f.license} |`),
    '',
    '## Summary',
    '',
    '| licence | packages |',
    '|---|---|',
    ...[...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([l, n]) => `| ${l} | ${n} |`),
    '',
    `## Runtime packages (${rows.length})`,
    '',
    '| package | version | licence |',
    '|---|---|---|',
    ...rows.map((r) => `| ${r.name} | ${r.version} | ${r.license} |`),
    '',
  ].join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(LICENCES_MD, renderLicences(productionTree()));
  console.log(`wrote ${path.relative(ROOT, LICENCES_MD)}`);
}
