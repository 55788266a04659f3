// The build's last step: what tsc does not emit (migrations, page assets, the client's generated types)
// copied next to the compiled files, then the marker that `npm start` and the tests look for.
import { copyFileSync, cpSync, writeFileSync } from 'node:fs';

const dirs = [
  'db/migrations',
  'i18n/messages',
  'web/assets',
  'web/signing/assets',
  'web/editor/assets',
  'web/embed/assets',
  'web/verify/assets',
  'web/verify-document/assets',
  'web/dashboard/assets',
  'web/docs/assets',
  'web/docs/reference',
];
for (const dir of dirs) cpSync(`src/${dir}`, `dist/${dir}`, { recursive: true });
copyFileSync('client/src/schema.d.ts', 'client/dist/schema.d.ts');
writeFileSync('dist/.built', '');
