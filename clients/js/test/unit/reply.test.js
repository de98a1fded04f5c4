// The reply assembler and the ThinkingML reader at their own seam: no server.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ReplyAssembler } from '../../src/reply.js';
import { parseReply } from '../../src/thinkingml.js';

test('deltas join in seq order; a retry drops what it refuses and the next attempt follows', () => {
  const r = new ReplyAssembler();
  r.add({ seq: 2, delta: 'b' });
  r.add({ seq: 1, delta: 'a' });
  assert.equal(r.text(), 'ab');
  r.retry({ attempt: 2, discard_through_seq: 2 });
  assert.equal(r.text(), '');
  r.add({ seq: 3, delta: 'kept', attempt: 2 });
  assert.equal(r.text(), 'kept');
  assert.equal(r.attempt, 2);
});

test('a reply read as it arrives: phases with titles, the final text, the serp queries', () => {
  const reply = '<thinking>\n<phase id="1">\n<title>Plan</title>\nThink.\n</phase>\n</thinking>\n<final>\nAnswer.\n' +
    '<!-- <serp_queries>\n["q1"]\n</serp_queries> -->\n</final>';
  const whole = parseReply(reply);
  assert.equal(whole.phases[0].title, 'Plan');
  assert.equal(whole.final.trim(), 'Answer.');
  assert.deepEqual(whole.serpQueries, ['q1']);
  const half = parseReply(reply.slice(0, reply.indexOf('Answer') + 3));
  assert.equal(half.phases.length, 1);
  assert.ok(half.final.startsWith('Ans'), half.final);
});
