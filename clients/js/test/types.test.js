// The types: types/api.d.ts is what api/openapi.yaml generates today (the document changed
// without `npm run types` fails here), and a TypeScript user's code (usage.ts) compiles
// against the declarations with strict checks.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('..', import.meta.url));
const run = (cmd, args) => execFileSync(cmd, args, { cwd: dir, encoding: 'utf8', stdio: 'pipe' });

test('the generated types are current', () => {
  assert.doesNotThrow(() => run(process.execPath, ['scripts/gen-types.mjs', '--check']));
});

test('code written against the declarations compiles', () => {
  try {
    run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'test/tsconfig.json']);
  } catch (err) {
    assert.fail(`tsc: ${err.stdout}${err.stderr}`);
  }
});
