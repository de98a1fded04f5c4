// The client against the real binary (SQLite, the scripted upstream), as a front end uses
// it: the reply it assembles is the stored text, through a correction retry, connection
// cuts, a cancel and a second device.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { createClient, PhaseflowError } from '../src/index.js';
import { cuttingProxy, startServer } from './harness.js';

let server;
let client;

before(async () => {
  server = await startServer({ PHASEFLOW_UPSTREAM_MAX_ATTEMPTS: '1' });
  client = createClient({ baseUrl: server.baseUrl, token: () => server.token('alice') });
});

after(() => server?.close());

// follow iterates a turn to its end and answers its events.
async function events(turn) {
  const out = [];
  for await (const ev of turn) out.push(ev);
  return out;
}

test('a turn assembled equals the stored text, read as ThinkingML', async () => {
  const session = await client.sessions.create({ locale: 'en' });
  const turn = await client.send(session.id, 'Draft a BTC momentum strategy');
  const evs = await events(turn);
  assert.equal(evs.at(-1).event, 'completed');
  assert.deepEqual(evs.map((e) => e.id), evs.map((_, i) => i + 1), 'each event once, in order');
  const stored = await client.messages.get(turn.messageId);
  assert.equal(turn.reply, stored.content);
  assert.equal(turn.replyChecked, true);
  assert.ok(turn.parsed.phases.length > 0 && turn.parsed.phases[0].title !== '');
  assert.ok(turn.parsed.final.length > 0);
  assert.ok(Array.isArray(turn.parsed.serpQueries));
  assert.equal(turn.validation.valid, true);
  assert.ok(turn.genui.some((c) => c.type === 'strategy_card'), JSON.stringify(turn.genui));
  assert.deepEqual(turn.statePatch, stored.state_patch);
  assert.ok(turn.toolCalls.some((t) => t.name === 'validate_strategy'));
});

test('a correction retry drops the refused attempt', async () => {
  const turn = await client.send(undefined, 'Draft a BTC momentum strategy [[fault:broken_xml_once]]');
  await turn.result();
  assert.equal(turn.attempt, 2);
  assert.equal(turn.metadata.attempts, 2);
  assert.equal(turn.reply, (await client.messages.get(turn.messageId)).content);
});

test('a stream cut at any point reconnects and loses and repeats nothing', async () => {
  const session = await client.sessions.create({ locale: 'en' });
  // Cuts at these byte counts of the first streams, then none: inside the first frame, at
  // frame boundaries and mid-frame further on.
  const cuts = [40, 150, 333, 777, 1500, 2600];
  const proxy = await cuttingProxy(server.baseUrl, (n) => cuts[n] ?? Infinity);
  try {
    const viaProxy = createClient({ baseUrl: proxy.url, token: () => server.token('alice') });
    const turn = await viaProxy.send(session.id, 'Run the backtest [[pace_ms:2]]');
    const evs = await events(turn);
    assert.equal(evs.at(-1).event, 'completed');
    assert.deepEqual(evs.map((e) => e.id), evs.map((_, i) => i + 1));
    assert.equal(turn.reply, (await client.messages.get(turn.messageId)).content);
    assert.ok(proxy.streams() > 3, `only ${proxy.streams()} stream requests: the cuts did not happen`);
  } finally {
    proxy.close();
  }
});

test('a stream cut at every frame boundary, and inside every frame, loses and repeats nothing', async () => {
  const turn = await (await client.send(undefined, 'Draft a BTC momentum strategy')).result();
  const stored = (await client.messages.get(turn.messageId)).content;
  // The bytes of one whole replay, to find where each frame ends in them.
  const chunks = [];
  const recorder = await cuttingProxy(server.baseUrl, () => Infinity, (n, chunk) => n === 0 && chunks.push(chunk));
  const whole = await createClient({ baseUrl: recorder.url, token: () => server.token('alice') }).messages.follow(turn.messageId).result();
  recorder.close();
  assert.equal(whole.reply, stored);
  const raw = Buffer.concat(chunks).toString('latin1');
  const ends = [...raw.matchAll(/\n\n/g)].map((m) => m.index + 2);
  assert.ok(ends.length > 20, `${ends.length} frames`);
  for (const end of ends.flatMap((e) => [e, e - 3])) {
    const proxy = await cuttingProxy(server.baseUrl, (n) => (n === 0 ? end : Infinity));
    try {
      const again = createClient({ baseUrl: proxy.url, token: () => server.token('alice') }).messages.follow(turn.messageId);
      const ids = (await events(again)).map((e) => e.id);
      assert.deepEqual(ids, ids.map((_, i) => i + 1), `cut at byte ${end}`);
      assert.equal(again.reply, stored, `cut at byte ${end}`);
      assert.equal(again.replyChecked, true);
    } finally {
      proxy.close();
    }
  }
});

test('cancel ends the turn with code cancelled, its text kept', async () => {
  const turn = await client.send(undefined, 'Draft a BTC momentum strategy [[pace_ms:200]]');
  for await (const ev of turn) {
    if (ev.event === 'content_delta') await turn.cancel();
  }
  assert.equal(turn.error.code, 'cancelled');
  const stored = await client.messages.get(turn.messageId);
  assert.equal(stored.status, 'cancelled');
  assert.equal(turn.reply, stored.content);
});

test('a second device follows the same reply', async () => {
  const turn = await client.send(undefined, 'Draft a BTC momentum strategy [[pace_ms:5]]');
  const other = createClient({ baseUrl: server.baseUrl, token: server.token('alice') });
  const [a, b] = await Promise.all([turn.result(), other.messages.follow(turn.messageId).result()]);
  assert.equal(a.reply, b.reply);
  assert.deepEqual(a.metadata, b.metadata);
  const late = await other.messages.follow(turn.messageId, { lastEventId: 3 }).result();
  assert.equal(late.done, true);
});

test('errors carry the API code, and a turn the upstream fails carries its code', async () => {
  await assert.rejects(client.sessions.get('no-such-session'), (err) => err instanceof PhaseflowError && err.status === 404 && err.code === 'not_found');
  await assert.rejects(client.send(undefined, ''), (err) => err instanceof PhaseflowError && err.code === 'bad_request');
  const stranger = createClient({ baseUrl: server.baseUrl, token: 'not-a-token' });
  await assert.rejects(stranger.sessions.create(), (err) => err.status === 401 && err.code === 'unauthorized');
  const turn = await client.send(undefined, 'Draft a BTC momentum strategy [[fault:http_500]]');
  await turn.result();
  assert.equal(turn.error.code, 'upstream_unavailable');
});

test('sessions list pages through every session', async () => {
  const solo = createClient({ baseUrl: server.baseUrl, token: server.token('pager') });
  for (let i = 0; i < 5; i++) await solo.sessions.create({ title: `s${i}` });
  const titles = [];
  for await (const s of solo.sessions.list({ limit: 2 })) titles.push(s.title);
  assert.deepEqual(titles, ['s4', 's3', 's2', 's1', 's0']);
});
