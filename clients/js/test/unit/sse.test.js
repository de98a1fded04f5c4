// The SSE reader and the stream follower at their own seam, on canned bytes: no server.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { followEvents, parseStream } from '../../src/sse.js';

// bytes is a ReadableStream of text cut into the given chunks (as a network might).
function bytes(...chunks) {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(ch));
      c.close();
    },
  });
}

async function all(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

test('events, data lines, comments and ids, whatever the line ends and cuts', async () => {
  const stream = 'retry: 2000\n\n: heartbeat\n\nevent: status\ndata: {"a":1}\nid: 1\n\r\nevent: content_delta\r\ndata: x\r\ndata: y\rid: 2\r\r';
  for (const cuts of [[stream], stream.split(''), [stream.slice(0, 7), stream.slice(7, 45), stream.slice(45)]]) {
    const got = await all(parseStream(bytes(...cuts)));
    assert.deepEqual(got, [
      { event: null, data: '', id: null, retry: 2000 },
      { event: 'status', data: '{"a":1}', id: '1', retry: null },
      { event: 'content_delta', data: 'x\ny', id: '2', retry: null },
    ]);
  }
});

test('a block without data is not an event; an id with NUL is ignored; a field without colon', async () => {
  const got = await all(parseStream(bytes('id: 5\n\nevent: x\ndata\nid: 6\0\n\n')));
  assert.deepEqual(got, [{ event: 'x', data: '', id: '5', retry: null }]);
});

// A fetch Response of a stream body.
const respond = (status, body) => new Response(body === undefined ? null : bytes(...[].concat(body)), { status });

const frame = (id, name, data) => `event: ${name}\ndata: ${JSON.stringify(data)}\nid: ${id}\n\n`;

test('a cut stream resumes from the last id, each event once and in order', async () => {
  const asked = [];
  const answers = [
    respond(200, [frame(1, 'status', { state: 'queued' }), frame(2, 'content_delta', { seq: 1, delta: 'a' }).slice(0, 20)]),
    respond(200, [frame(2, 'content_delta', { seq: 1, delta: 'a' }), frame(3, 'completed', { reply_len: 1 })]),
  ];
  const got = await all(followEvents(async (lastId) => { asked.push(lastId); return answers.shift(); }, { sleep: async () => {} }));
  assert.deepEqual(asked, [0, 1]);
  assert.deepEqual(got.map((e) => [e.id, e.event]), [[1, 'status'], [2, 'content_delta'], [3, 'completed']]);
});

test('a 204 ends the stream; a refused one throws with its status', async () => {
  assert.deepEqual(await all(followEvents(async () => respond(204), { sleep: async () => {} })), []);
  await assert.rejects(all(followEvents(async () => respond(404, '{}'), { sleep: async () => {} })), (e) => e.status === 404);
});
