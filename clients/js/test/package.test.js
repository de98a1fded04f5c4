// The package as a team outside this repository gets it: `npm pack` holds the code, the
// types, the README and the licence (Apache-2.0, the repository's) and nothing else, and
// code importing each entry point type-checks under both module resolutions TypeScript
// users have: node16 and bundler.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'phaseflow-pack-'));
after(() => rmSync(work, { recursive: true, force: true }));

const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));

test('the package is publishable under the repository licence', () => {
  assert.equal(pkg.license, 'Apache-2.0');
  assert.notEqual(pkg.private, true);
  assert.equal(readFileSync(join(dir, 'LICENSE'), 'utf8'), readFileSync(join(dir, '..', '..', 'LICENSE'), 'utf8'));
});

test('npm pack holds what a user needs and nothing else', () => {
  const [packed] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: dir, encoding: 'utf8' }));
  const files = packed.files.map((f) => f.path).sort();
  assert.deepEqual(files, [
    'LICENSE', 'README.md', 'package.json',
    'src/eventsource.js', 'src/index.js', 'src/react.js', 'src/reply.js', 'src/sse.js', 'src/thinkingml.js',
    'types/api.d.ts', 'types/index.d.ts', 'types/react.d.ts', 'types/thinkingml.d.ts',
  ]);
  const into = join(work, 'node_modules', '@phaseflow', 'client');
  mkdirSync(into, { recursive: true });
  execFileSync('tar', ['-xzf', join(work, packed.filename), '-C', into, '--strip-components=1']);
});

const consumer = `import { createClient, type GenUICard } from '@phaseflow/client';
import { parseReply } from '@phaseflow/client/thinkingml';
import { useSend } from '@phaseflow/client/react';
export async function go(): Promise<string> {
  const pf = createClient({ baseUrl: 'https://api.example', token: 'x' });
  const turn = await pf.send(undefined, 'hello');
  const cards: GenUICard[] = turn.genui;
  const prompt = cards.find((c) => c.type === 'choice_prompt');
  const first = prompt?.type === 'choice_prompt' ? prompt.options?.[0]?.label : undefined;
  return [parseReply(turn.reply).final, first, typeof useSend].join(' ');
}
`;

for (const [resolution, module] of [['node16', 'node16'], ['bundler', 'esnext']]) {
  test(`the types resolve under moduleResolution ${resolution}`, () => {
    const project = join(work, resolution);
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'consumer.ts'), consumer);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'es2022', module, moduleResolution: resolution, types: [] },
      files: ['consumer.ts'],
    }));
    // The consumer finds the unpacked package in node_modules beside its folder.
    try {
      execFileSync(process.execPath, [join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(project, 'tsconfig.json')], { cwd: project, encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      assert.fail(`tsc (${resolution}): ${err.stdout}${err.stderr}`);
    }
  });
}
