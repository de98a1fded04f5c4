// @phaseflow/client/react in a DOM (jsdom) with React's own renderer: the component shows
// the reply as it streams and ends with the stored text; a refused post is the hook's error.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { JSDOM } from 'jsdom';

import { createClient } from '../src/index.js';
import { startServer } from './harness.js';

let server;
let client;
let React;
let act;
let createRoot;
let useSend;
let dom;

before(async () => {
  dom = new JSDOM('<!doctype html><div id="root"></div>');
  globalThis.window = dom.window;
  globalThis.document = dom.window.document;
  globalThis.navigator ??= dom.window.navigator;
  globalThis.IS_REACT_ACT_ENVIRONMENT = true;
  React = await import('react');
  ({ act } = React);
  ({ createRoot } = await import('react-dom/client'));
  ({ useSend } = await import('../src/react.js'));
  server = await startServer();
  client = createClient({ baseUrl: server.baseUrl, token: () => server.token('react') });
});

after(() => {
  server?.close();
  dom?.window.close();
});

test('useSend and useTurn render the reply as it streams, then the stored text', async () => {
  const renders = [];
  let api;
  function Chat() {
    api = useSend(client, undefined);
    const text = api.turn?.parsed.final ?? '';
    renders.push(text);
    return React.createElement('p', { id: 'final', 'data-status': api.turn?.status ?? '' }, text);
  }
  const root = createRoot(document.getElementById('root'));
  await act(async () => root.render(React.createElement(Chat)));
  let turn;
  await act(async () => {
    turn = await api.send('Draft a BTC momentum strategy [[pace_ms:5]]');
  });
  await act(async () => {
    await turn.result();
  });
  const stored = await client.messages.get(turn.messageId);
  const shown = document.getElementById('final').textContent;
  assert.ok(shown.length > 0 && stored.content.includes(shown.slice(0, 40)), shown);
  assert.equal(document.getElementById('final').dataset.status, turn.status);
  const partial = renders.filter((r) => r && r !== shown);
  assert.ok(partial.length > 0, `rendered ${renders.length} times, never mid-reply`);

  await act(async () => {
    await api.send('');
  });
  assert.equal(api.error?.code, 'bad_request');
  await act(async () => root.unmount());
});

test('useSend picks up the turn running in its session after a reload, and shows the stored text', async () => {
  const session = await client.sessions.create({ locale: 'en' });
  const sent = await client.send(session.id, 'Draft a BTC momentum strategy [[pace_ms:30]]');
  for await (const ev of sent) {
    if (ev.event === 'content_delta') break; // the page "reloads" mid-reply
  }
  let api;
  function Chat() {
    api = useSend(client, session.id);
    return React.createElement('p', { id: 'resumed' }, api.turn?.parsed.final ?? '');
  }
  const root = createRoot(document.getElementById('root'));
  await act(async () => root.render(React.createElement(Chat)));
  for (let i = 0; i < 100 && !api.turn; i++) {
    await act(async () => new Promise((r) => setTimeout(r, 20)));
  }
  assert.equal(api.turn?.messageId, sent.messageId, 'the running turn was not picked up');
  await act(async () => {
    await api.turn.result();
  });
  const stored = await client.messages.get(sent.messageId);
  assert.equal(api.turn.reply, stored.content);
  assert.ok(stored.content.includes(document.getElementById('resumed').textContent.slice(0, 40)));
  assert.equal(await client.sessions.running(session.id), null, 'a finished session still has a running turn');
  await act(async () => root.unmount());
});
