// test-lane: once (reads package.json files and fonts in node_modules; opens no database)
/**
 * Signet is Apache-2.0 (LICENSE): everything it ships at run time must allow redistribution under it,
 * the fonts included, and docs/licences.md must list what is shipped today.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { FONTS, LICENCES_MD, ROOT, allowed, productionTree, renderLicences } from '../scripts/licences.js';

describe('licences', () => {
  test('Signet itself is Apache-2.0: LICENSE and package.json agree', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    assert.equal(pkg.license, 'Apache-2.0');
    const text = readFileSync(path.join(ROOT, 'LICENSE'), 'utf8');
    assert.match(text, /Apache License\s+Version 2\.0, January 2004/);
    assert.match(text, /END OF TERMS AND CONDITIONS/);
  });

  test('every runtime dependency has a licence compatible with Apache-2.0', () => {
    const rows = productionTree();
    assert.ok(rows.length > 50, 'the production tree was walked');
    assert.deepEqual(rows.filter((r) => !allowed(r.license)).map((r) => `${r.name}@${r.version}: ${r.license}`), []);
  });

  test('every font Signet draws or serves is listed, exists, and is under an allowed licence', () => {
    for (const f of FONTS) {
      assert.ok(allowed(f.license), `${f.files}: ${f.license}`);
      const dir = path.join(ROOT, 'node_modules', path.dirname(f.files));
      const pattern = new RegExp(`^${path.basename(f.files).replace(/[.]/g, '\\.').replace('*', '.*')}$`);
      assert.ok(existsSync(dir) && readdirSync(dir).some((n) => pattern.test(n)), `${f.files} is installed`);
    }
    // The fonts src/pdf/fonts.ts loads come from the packages listed above, and no other.
    const sources = readFileSync(path.join(ROOT, 'src/pdf/fonts.ts'), 'utf8');
    const packages = new Set([...sources.matchAll(/require\.resolve\('([^']+?)\/(?:package\.json|[^']*\.(?:ttf|otf))'\)/g)].map((m) => m[1]));
    for (const p of packages) assert.ok(FONTS.some((f) => f.files.startsWith(`${p}/`)), `fonts from ${p} are listed in FONTS`);
    assert.ok(packages.size >= 2, `found the font packages in fonts.ts: ${[...packages]}`);
  });

  test('docs/licences.md is current (npx tsx scripts/licences.ts rewrites it)', () => {
    assert.equal(readFileSync(LICENCES_MD, 'utf8'), renderLicences(productionTree()));
  });

  test('SPDX expressions: an OR needs one allowed branch, an AND all its parts', () => {
    assert.equal(allowed('(MIT OR GPL-3.0)'), true);
    assert.equal(allowed('MIT AND GPL-3.0'), false);
    assert.equal(allowed('AGPL-3.0'), false);
    assert.equal(allowed('UNKNOWN'), false);
  });
});
