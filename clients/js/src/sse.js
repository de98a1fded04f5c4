// sse.js: reads a server-sent event stream from a fetch Response body, by the HTML
// standard's rules (fields event, data, id and retry; comments; \n, \r\n or \r line ends;
// an event is dispatched at a blank line and carries the last id seen), and follows a
// Phaseflow event stream across dropped connections: it reconnects with Last-Event-ID and
// a bounded backoff, and hands on each event once, in order, whatever the connection did.

// parseStream yields {event, data, id, retry} for each dispatched event of body (a
// ReadableStream of bytes). A block without data is not dispatched; a retry field alone is
// yielded with event null so the caller can learn the server's reconnection time.
export async function* parseStream(body) {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data = [];
  let id = null;
  let retry = null;
  const reader = body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      // At the end a held \r is a line end after all.
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buffer);
        if (!m) break;
        if (!done && m[0] === '\r' && m.index === buffer.length - 1) break; // a \r\n may be split
        const line = buffer.slice(0, m.index);
        buffer = buffer.slice(m.index + m[0].length);
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n'), id, retry };
          else if (retry !== null) yield { event: null, data: '', id, retry };
          event = '';
          data = [];
          retry = null;
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
        else if (field === 'id' && !value.includes('\0')) id = value;
        else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
      }
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}

// The backoff between reconnects: minDelay after a connection that delivered events (a cut
// stream resumes at once), else the server's retry (2 s by contract) doubling while the
// attempts fail, never over maxDelay; after maxFailures failures in a row it gives up.
const minDelay = 100;
const maxDelay = 5000;
const maxFailures = 8;

// StreamLostError ends a stream that could not be followed to its terminal event: the
// server refused it (its status), or the connection kept failing.
export class StreamLostError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'StreamLostError';
    this.status = status;
  }
}

// followEvents yields the events of a Phaseflow message's stream after lastId, each once,
// until a terminal event (one named in terminals), reconnecting as needed. open(lastId) makes
// one request and answers a fetch Response. A 204 means the message ended before lastId's
// successor: nothing more comes. signal stops it; onConnection(state, reconnects) hears
// 'open' for each connection that answered and 'reconnecting' before each new try,
// reconnects counting the tries so far.
export async function* followEvents(
  open,
  { lastId = 0, signal, terminals = turnEnds, sleep = delay, onConnection = () => {} } = {},
) {
  let failures = 0;
  let reconnects = 0;
  let wait = 2000; // the contract's retry, until the server says its own
  for (;;) {
    signal?.throwIfAborted();
    let resp;
    try {
      resp = await open(lastId);
    } catch (err) {
      if (signal?.aborted) throw err;
      resp = null;
    }
    if (resp && resp.status === 204) return;
    if (resp && !resp.ok) {
      const retriable = resp.status >= 500 || resp.status === 429;
      if (!retriable) throw new StreamLostError(`the event stream was refused: ${resp.status}`, resp.status);
    }
    if (resp && resp.ok) {
      onConnection('open', reconnects);
      let progressed = false;
      try {
        for await (const ev of parseStream(resp.body)) {
          if (ev.retry !== null) wait = Math.min(Math.max(ev.retry, minDelay), maxDelay);
          if (ev.event === null) continue;
          const seq = ev.id === null ? null : Number(ev.id);
          if (seq !== null && seq <= lastId) continue; // seen before the reconnect
          if (seq !== null) lastId = seq;
          progressed = true;
          const item = { event: ev.event, data: parseData(ev.data), id: seq };
          yield item;
          if (terminals.includes(item.event)) return;
        }
      } catch (err) {
        if (signal?.aborted) throw err; // a cut connection is retried below
      }
      if (progressed) {
        failures = 0;
        onConnection('reconnecting', ++reconnects);
        await sleep(minDelay, signal);
        continue;
      }
    }
    failures += 1;
    if (failures > maxFailures) throw new StreamLostError(`the event stream failed ${maxFailures} times in a row`);
    onConnection('reconnecting', ++reconnects);
    await sleep(Math.min(wait * 2 ** (failures - 1), maxDelay), signal);
  }
}

// turnEnds are the events that end a message's stream.
export const turnEnds = ['completed', 'error'];

export function parseData(s) {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

function delay(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
