// eventsource.js: follows a Phaseflow event stream with an EventSource, for pages that
// cannot send an Authorization header: the message's stream token rides in the URL, and
// the browser reconnects by itself with Last-Event-ID, which the server resumes right
// after. Its events are handed on like followEvents' (sse.js): each once, in order, until
// the terminal event.

import { StreamLostError, parseData, turnEnds } from './sse.js';

// Events wait here while the consumer is slower than the stream. Past this many the source
// is closed (the server keeps the log) and opened again after the last event taken, once
// the consumer has caught up: a slow reader pauses the stream and loses nothing.
const maxWaiting = 4096;

// followEventSource yields the events at url (which carries its stream_token) after
// lastId. names are the event names to listen for besides the terminal ones; the server's
// "error" event (JSON data) is told from EventSource's own (no data). A source the browser
// gives up on (a refused or expired token, a 204) ends the stream with StreamLostError
// unless a terminal event came. EventSourceImpl is the EventSource to use (the global one
// by default; in Node, the eventsource package's).
export async function* followEventSource(
  url,
  {
    lastId = 0,
    signal,
    names = ['status', 'content_delta', 'heartbeat'],
    terminals = turnEnds,
    onConnection = () => {},
    EventSourceImpl = globalThis.EventSource,
  } = {},
) {
  if (!EventSourceImpl) throw new Error('no EventSource here: pass EventSourceImpl, or follow over fetch');
  const waiting = [];
  let wake = null;
  let failure = null;
  let paused = false;
  let source = null;
  let reconnects = 0; // the browser's tries after a lost connection
  let lastQueued = lastId;
  const notify = () => {
    wake?.();
    wake = null;
  };
  const push = (name, e) => {
    const seq = e.lastEventId === '' ? null : Number(e.lastEventId);
    if (seq !== null && seq <= lastQueued) return; // seen before the reconnect
    if (seq !== null) lastQueued = seq;
    waiting.push({ event: name, data: parseData(e.data), id: seq });
    if (waiting.length >= maxWaiting) pause();
    notify();
  };
  const open = () => {
    const u = new URL(url, globalThis.location?.href ?? 'http://localhost/');
    if (lastQueued > 0) u.searchParams.set('last_event_id', String(lastQueued));
    source = new EventSourceImpl(u.toString());
    source.addEventListener('open', () => onConnection('open', reconnects));
    for (const name of names) source.addEventListener(name, (e) => push(name, e));
    for (const name of terminals.filter((n) => n !== 'error')) source.addEventListener(name, (e) => push(name, e));
    source.addEventListener('error', (e) => {
      if (typeof e.data === 'string' && e.data !== '' && terminals.includes('error')) {
        push('error', e); // the server's error event: terminal
      } else if (source.readyState === 2 /* CLOSED */) {
        failure = new StreamLostError('the event stream was refused or ended without its last event');
        notify();
      } else {
        onConnection('reconnecting', ++reconnects);
      }
    });
  };
  const pause = () => {
    paused = true;
    source.close();
  };
  const stop = () => {
    source?.close();
    notify();
  };
  signal?.addEventListener('abort', stop, { once: true });
  open();
  try {
    for (;;) {
      signal?.throwIfAborted();
      if (waiting.length > 0) {
        const item = waiting.shift();
        yield item;
        if (terminals.includes(item.event)) return;
        continue;
      }
      if (paused) {
        paused = false;
        open();
        continue;
      }
      if (failure) throw failure;
      await new Promise((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    source?.close();
  }
}
