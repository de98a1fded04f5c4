// The client's ThinkingML reader agrees with the server's validator: on every valid reply
// of the held corpus (orchestration/thinkingml/testdata/replies) and on the replies the
// scripted model writes in each scenario and locale, the phases, <think>, <serp>, serp
// queries and the final text's length the reader finds are what POST /api/v1/validate
// counts. And on every reply of the corpus, valid or not, it answers without throwing.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';

import { createClient, parseReply } from '../src/index.js';
import { startServer } from './harness.js';

const corpus = new URL('../../../orchestration/thinkingml/testdata/replies/', import.meta.url);

let server;
let client;

before(async () => {
  server = await startServer();
  client = createClient({ baseUrl: server.baseUrl, token: () => server.token('reader') });
});

after(() => server?.close());

// agrees compares the reader's view of reply with the validator's summary of it.
async function agrees(name, reply) {
  const verdict = await client.request('POST', '/validate', { reply });
  const r = parseReply(reply);
  if (!verdict.valid) return false;
  const s = verdict.summary;
  assert.equal(r.phases.length, s.phases, `${name}: phases`);
  assert.equal(r.think != null, s.has_think, `${name}: <think>`);
  assert.equal(r.serp != null, s.has_serp, `${name}: <serp>`);
  assert.deepEqual(r.serpQueries, s.serp_queries, `${name}: serp queries`);
  assert.equal([...(r.final ?? '').trim()].length, s.final_chars, `${name}: final text`);
  for (const ph of r.phases) assert.ok(ph.title, `${name}: phase ${ph.id} has no title`);
  return true;
}

test('on the held corpus', async () => {
  let valid = 0;
  for (const file of readdirSync(corpus).filter((f) => f.endsWith('.xml'))) {
    const text = readFileSync(new URL(file, corpus), 'utf8');
    if (await agrees(file, text)) valid += 1;
  }
  assert.ok(valid >= 2, `${valid} valid replies in the corpus`);
});

test('on the scripted model\'s replies, in both locales', async () => {
  const asks = [
    ['en', 'Draft a BTC momentum strategy'],
    ['zh', '帮我设计一个BTC动量策略'],
    ['en', 'Run the backtest [[scenario:stress_feedback_revise]]'],
    ['zh', '部署 [[scenario:deploy_rollout]]'],
    ['en', 'hello'],
  ];
  for (const [locale, text] of asks) {
    const session = await client.sessions.create({ locale });
    const turn = await (await client.send(session.id, text)).result();
    assert.ok(await agrees(`${locale} "${text}"`, turn.reply), `${locale} "${text}": the scripted reply is not valid`);
  }
});
