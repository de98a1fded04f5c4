// follow.mjs CLIENT URL TOKEN follows one message's event stream at URL with the npm SSE
// client CLIENT (eventsource, eventsource-parser or fetch-event-source), as a front end
// that knows only docs/api.md would: it reconnects however the library does when the
// connection is cut, assembles the reply from the content deltas (dropping an attempt the
// server discarded), and stops at the terminal event or a 204. It prints one JSON line: the
// reply, the ids of the events it handled in order, the terminal event and how many
// connections it opened.
import { EventSource } from 'eventsource';
import { createParser } from 'eventsource-parser';

globalThis.window ??= globalThis; // fetch-event-source reaches for window's timers
const { fetchEventSource } = await import('@microsoft/fetch-event-source');

const [client, url, token] = process.argv.slice(2);
const auth = { Authorization: `Bearer ${token}` };
const got = { reply: '', ids: [], end: null, connections: 0 };
let deltas = [];

// handle takes one event; it reports whether the stream is over.
function handle(name, data, id) {
  if (id) got.ids.push(Number(id));
  const d = JSON.parse(data);
  if (name === 'content_delta') deltas.push(d);
  if (name === 'status' && d.state === 'retrying') deltas = deltas.filter((x) => x.seq > d.discard_through_seq);
  if (name === 'completed' || name === 'error') {
    got.end = name;
    return true;
  }
  return false;
}

// counting is fetch that counts the connections a client opens.
function counting(input, init = {}) {
  got.connections++;
  return fetch(input, { ...init, headers: { ...init.headers, ...auth } });
}

const followers = {
  eventsource: () => new Promise((resolve, reject) => {
    const es = new EventSource(url, { fetch: counting });
    for (const name of ['status', 'content_delta', 'completed', 'error']) {
      es.addEventListener(name, (e) => {
        if (e.data === undefined) return; // the connection's error, not the event: it reconnects
        if (handle(name, e.data, e.lastEventId)) {
          es.close();
          resolve();
        }
      });
    }
    setTimeout(() => reject(new Error('eventsource: no terminal event in time')), 90_000).unref();
  }),

  'eventsource-parser': async () => {
    let last = '';
    for (let done = false; !done;) {
      const headers = { Accept: 'text/event-stream', ...(last ? { 'Last-Event-ID': last } : {}) };
      let res;
      try {
        res = await counting(url, { headers });
      } catch {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      if (res.status === 204) return;
      const parser = createParser({
        onEvent(ev) {
          if (ev.id) last = ev.id;
          done ||= handle(ev.event, ev.data, ev.id);
        },
      });
      const text = new TextDecoder();
      try {
        for await (const chunk of res.body) parser.feed(text.decode(chunk, { stream: true }));
      } catch {
        // cut: reconnect from the last id
      }
    }
  },

  'fetch-event-source': async () => {
    // A browser library: its dispose() always calls document.removeEventListener and
    // window.clearTimeout, even with openWhenHidden, so Node needs both names to end a
    // stream (Azure/fetch-event-source#50). Nothing else of them is used here.
    globalThis.document ??= { hidden: false, addEventListener() {}, removeEventListener() {} };
    globalThis.window ??= globalThis;
    const over = new Error('over');
    const ctrl = new AbortController();
    try {
      await fetchEventSource(url, {
        fetch: counting, signal: ctrl.signal, openWhenHidden: true,
        async onopen(res) {
          if (res.status === 204) throw over;
        },
        onmessage(ev) {
          if (handle(ev.event, ev.data, ev.id)) {
            ctrl.abort();
            throw over;
          }
        },
        onerror(err) {
          if (err === over) throw err; // the end: stop; anything else: retry
        },
      });
    } catch (err) {
      if (err !== over) throw err;
    }
  },
};

const follow = followers[client];
if (!follow) {
  console.error(`unknown client ${client}; one of ${Object.keys(followers).join(', ')}`);
  process.exit(2);
}
await follow();
got.reply = deltas.map((d) => d.delta).join('');
console.log(JSON.stringify(got));
process.exit(0);
