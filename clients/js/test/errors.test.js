// Every error code a client of the API can meet, as the client hands it on: a refused
// request throws a PhaseflowError carrying the code (and Retry-After where the server
// sends one); a turn that fails ends with its error event's code on turn.error. Each case
// uses its own user, so one case's per-user limits never touch another's. Not here:
// internal_error, a fault of the server's own that no request can provoke.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { createClient, PhaseflowError } from '../src/index.js';
import { startServer } from './harness.js';

let server;
let rated;

before(async () => {
  server = await startServer({
    PHASEFLOW_UPSTREAM_MAX_ATTEMPTS: '1',
    PHASEFLOW_IDLE_TIMEOUT: '1s',
    PHASEFLOW_MAX_REPLY_BYTES: '8192',
    PHASEFLOW_MAX_TURNS_PER_USER: '2',
    PHASEFLOW_MAX_STREAMS_PER_USER: '2',
    PHASEFLOW_USER_CALL_BUDGET: '3',
    PHASEFLOW_MAX_BODY_BYTES: '4096',
  });
  rated = await startServer({ PHASEFLOW_USER_MESSAGE_RATE: '1', PHASEFLOW_USER_MESSAGE_BURST: '1' });
});

after(() => {
  server?.close();
  rated?.close();
});

const as = (srv, user) => createClient({ baseUrl: srv.baseUrl, token: srv.token(user) });
const slow = 'A plain reply, slowly [[scenario:default]] [[pace_ms:60000]]';

// refused asserts that call throws a PhaseflowError with status and code.
async function refused(call, status, code) {
  await assert.rejects(call, (err) => {
    assert.ok(err instanceof PhaseflowError, `${err}`);
    assert.equal(err.code, code, err.message);
    assert.equal(err.status, status);
    return true;
  });
}

const answers = [
  ['bad_request', 400, (c) => c.send(undefined, '')],
  ['unauthorized', 401, () => createClient({ baseUrl: server.baseUrl, token: 'not-a-token' }).sessions.create()],
  ['not_found', 404, (c) => c.messages.get('no-such-message')],
  ['unsupported_locale', 400, (c) => c.sessions.create({ locale: 'fr' })],
  ['body_too_large', 413, (c) => c.send(undefined, 'x'.repeat(8000))],
  ['policy_not_allowed', 403, (c) => c.send(undefined, 'hi', { runtimePolicy: { reply_policy: 'off' } })],
  ['unknown_skill', 404, (c) => c.skills.run('no_such_skill', {})],
  ['invalid_input', 400, (c) => c.skills.startJob('post_views', [])],
  ['phase_move_forbidden', 422, async (c) => c.sessions.movePhase((await c.sessions.create()).id, 'deployment', 'skip ahead')],
  ['message_finished', 409, async (c) => c.messages.cancel((await (await c.send(undefined, 'hello')).result()).messageId)],
];

for (const [code, status, call] of answers) {
  test(`a refused request carries ${code}`, async () => {
    await refused(call(as(server, `refused-${code}`)), status, code);
  });
}

test('a second post while a turn runs is generation_running, with the running message', async () => {
  const c = as(server, 'running');
  const first = await c.send(undefined, slow);
  await refused(c.send(first.sessionId, 'and another'), 409, 'generation_running');
  await first.cancel();
});

test('too_many_turns, too_many_streams and too_many_messages carry Retry-After', async () => {
  const c = as(server, 'limits');
  const running = await c.send(undefined, slow);
  const second = await c.send(undefined, slow);
  await assert.rejects(c.send(undefined, slow), (err) => err.code === 'too_many_turns' && err.status === 429 && err.retryAfter > 0);
  await second.cancel();
  const held = [0, 1].map(() => new AbortController());
  const opened = held.map((h) => fetch(`${server.baseUrl}/api/v1/messages/${running.messageId}/events`, {
    headers: { Authorization: `Bearer ${server.token('limits')}` },
    signal: h.signal,
  }));
  await Promise.all(opened);
  const third = await fetch(`${server.baseUrl}/api/v1/messages/${running.messageId}/events`, {
    headers: { Authorization: `Bearer ${server.token('limits')}` },
  });
  assert.equal(third.status, 429);
  assert.equal((await third.json()).error.code, 'too_many_streams');
  for (const h of held) h.abort();
  await running.cancel();

  const r = as(rated, 'rated');
  await r.send(undefined, 'hello');
  await assert.rejects(r.send(undefined, 'hello again'), (err) => err.code === 'too_many_messages' && err.retryAfter > 0);
});

test('budget_exhausted once a user has used the day\'s model calls', async () => {
  const c = as(server, 'spender');
  for (let i = 0; i < 3; i++) await (await c.send(undefined, `hello ${i}`)).result();
  await refused(c.send(undefined, 'one more'), 429, 'budget_exhausted');
});

const failures = [
  ['rate_limited', '[[fault:http_429]]'],
  ['upstream_unavailable', '[[fault:http_500]]'],
  ['provider_error', '[[fault:mid_stream_error]]'],
  ['upstream_timeout', '[[fault:stall]]'],
  ['reply_invalid', '[[fault:broken_xml]]'],
  ['reply_too_large', '[[flood:20000]]'],
];

for (const [code, marker] of failures) {
  test(`a turn that fails ends with ${code}`, async () => {
    const turn = await as(server, `fails-${code}`).send(undefined, `Draft a BTC momentum strategy ${marker}`);
    await turn.result();
    assert.equal(turn.error?.code, code, JSON.stringify(turn.error));
    assert.ok(turn.error.message);
    assert.equal(turn.metadata, null);
  });
}

test('a cancelled turn ends with cancelled, its text so far kept', async () => {
  const c = as(server, 'canceller');
  const turn = await c.send(undefined, slow);
  for await (const ev of turn) {
    if (ev.event === 'content_delta') await turn.cancel();
  }
  assert.equal(turn.error.code, 'cancelled');
  assert.equal((await c.messages.get(turn.messageId)).content, turn.reply);
});

test('a turn its replica stops mid-reply ends with interrupted, its text so far kept', async () => {
  const srv = await startServer({ PHASEFLOW_SHUTDOWN_GRACE: '300ms' });
  try {
    const turn = await as(srv, 'stopped').send(undefined, 'very slow [[pace_ms:200]]');
    let deltas = 0;
    let stopped = null;
    for await (const ev of turn) {
      if (ev.event === 'content_delta' && ++deltas === 3) stopped = srv.stop();
    }
    await stopped;
    assert.equal(turn.error?.code, 'interrupted', JSON.stringify(turn.error));
    assert.ok(turn.reply.length > 0);
  } finally {
    srv.close();
  }
});
