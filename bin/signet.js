#!/usr/bin/env node
// The `signet` command runs the compiled CLI; `npm run build` produces dist/.
import('../dist/cli.js').catch((err) => {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli.js')) {
    console.error('signet: dist/ is missing; run `npm run build` first');
    process.exit(1);
  }
  throw err;
});
