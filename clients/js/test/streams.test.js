// Following over EventSource with the stream token (where a page cannot send headers), and
// a JSON-skill job's progress, against the real binary.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { EventSource } from 'eventsource';

import { createClient } from '../src/index.js';
import { cuttingProxy, startServer } from './harness.js';

let server;
let client;

before(async () => {
  server = await startServer();
  client = createClient({ baseUrl: server.baseUrl, token: () => server.token('erin') });
});

after(() => server?.close());

const postInput = (i) => ({
  content_text: `Bitcoin breakout, buying more $BTC ${i}`,
  platform: 'x',
  posted_at: '2026-11-30T08:00:00Z',
  assets: [{ symbol: 'BTC', name: 'Bitcoin', market: 'CRYPTO' }],
});

test('over EventSource, a turn cut mid-stream resumes by the stream token and loses nothing', async () => {
  const cuts = [200, 900];
  const proxy = await cuttingProxy(server.baseUrl, (n) => cuts[n] ?? Infinity);
  try {
    const pf = createClient({ baseUrl: proxy.url, token: () => server.token('erin'), transport: 'eventsource', EventSource });
    const states = [];
    const turn = await pf.send(undefined, 'Draft a BTC momentum strategy [[pace_ms:2]]', {
      onConnection: (state) => states.push(state),
    });
    const ids = [];
    for await (const ev of turn) ids.push(ev.id);
    assert.deepEqual(ids, ids.map((_, i) => i + 1));
    assert.equal(turn.metadata.phase, 'strategy');
    assert.equal(turn.replyChecked, true);
    assert.equal(turn.reply, (await client.messages.get(turn.messageId)).content);
    assert.ok(turn.reconnects >= 2, `reconnects ${turn.reconnects}, states ${states}`);
  } finally {
    proxy.close();
  }
});

test('over EventSource, a finished message followed by its stream token replays its whole log', async () => {
  const done = await (await client.send(undefined, 'hello')).result();
  const pf = createClient({ baseUrl: server.baseUrl, token: () => server.token('erin'), transport: 'eventsource', EventSource });
  const again = pf.messages.follow(done.messageId, { streamToken: done.streamToken });
  const names = [];
  for await (const ev of again) names.push(ev.event);
  assert.equal(names.at(-1), 'completed'); // the whole log replayed
});

test('a job reports its progress to its end, and resumes after the last event seen', async () => {
  const job = await client.skills.startJob('post_views', [0, 1, 2, 3, 4].map(postInput));
  const watch = client.skills.followJob(job.job_id);
  const seen = [];
  for await (const ev of watch) seen.push([ev.event, ev.id, ev.data.done, ev.data.total]);
  assert.deepEqual(seen, [
    ['progress', 1, 1, 5],
    ['progress', 2, 2, 5],
    ['progress', 3, 3, 5],
    ['progress', 4, 4, 5],
    ['progress', 5, 5, 5],
    ['completed', 6, 5, 5],
  ]);
  assert.equal(watch.ended, 'completed');
  assert.equal(watch.progress.succeeded, 5);
  const rest = [];
  for await (const ev of client.skills.followJob(job.job_id, { lastEventId: 3 })) rest.push(ev.id);
  assert.deepEqual(rest, [4, 5, 6]);
  const es = createClient({ baseUrl: server.baseUrl, transport: 'eventsource', EventSource });
  const last = await es.skills.followJob(job.job_id, { streamToken: job.stream_token }).result();
  assert.equal(last.done, 5);
});
