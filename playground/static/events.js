// events.js: follows one message's event stream with the browser's EventSource
// (sse-contract.md §5). EventSource reconnects by itself after a dropped connection and
// sends Last-Event-ID, and the server resumes right after it, so a reconnect loses and
// repeats nothing; the stream token stays in the URL, so the reconnect is authorised too.
// This module only counts the reconnects, tells the server's "error" event (JSON data)
// from EventSource's own (no data), and closes the stream at the terminal event.

// follow opens url and calls on.status / on.content_delta / on.heartbeat with each event's
// data, then exactly one of on.completed(data), on.error(data) or on.lost() (the stream
// ended without a terminal event and will not come back, e.g. the stream token expired).
// on.connection(state, reconnects) reports 'open' and 'reconnecting'. It returns a handle
// whose close() stops following.
export function follow(url, on) {
  const source = new EventSource(url);
  let opens = 0;
  let done = false;
  const finish = () => {
    done = true;
    source.close();
  };
  source.addEventListener('open', () => {
    opens += 1;
    on.connection?.('open', opens - 1);
  });
  for (const name of ['status', 'content_delta', 'heartbeat']) {
    source.addEventListener(name, (e) => on[name]?.(JSON.parse(e.data), e.lastEventId));
  }
  source.addEventListener('completed', (e) => {
    finish();
    on.completed(JSON.parse(e.data));
  });
  source.addEventListener('error', (e) => {
    if (done) return;
    if (e instanceof MessageEvent && typeof e.data === 'string' && e.data !== '') {
      finish(); // the server's error event: terminal
      on.error(JSON.parse(e.data));
    } else if (source.readyState === EventSource.CLOSED) {
      done = true; // refused (401, 404) or 204: EventSource gives up
      on.lost();
    } else {
      on.connection?.('reconnecting', Math.max(0, opens - 1));
    }
  });
  return { close: finish };
}
