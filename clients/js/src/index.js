// @phaseflow/client: Phaseflow's API for browsers and Node 20, over fetch. Every route a
// front end uses returns the API's JSON or throws a PhaseflowError carrying its code; a
// message's turn is followed as an async iterator of its events, across dropped
// connections, while the turn keeps the reply assembled by the contract's retry rule and
// read as ThinkingML (thinking phases, final text, serp queries).

import { ReplyAssembler } from './reply.js';
import { parseReply } from './thinkingml.js';
import { followEvents } from './sse.js';
import { followEventSource } from './eventsource.js';

export { StreamLostError } from './sse.js';
export { parseReply } from './thinkingml.js';
export { ReplyAssembler } from './reply.js';

// PhaseflowError is an error answer: status, the API's code (e.g. too_many_turns), its
// message, Retry-After in seconds when the answer had one, and the whole error object.
export class PhaseflowError extends Error {
  constructor(status, code, message, detail, retryAfter) {
    super(message);
    this.name = 'PhaseflowError';
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.retryAfter = retryAfter;
  }
}

// createClient returns the client of the API at baseUrl ("https://host", no /api/v1);
// token is a bearer token or a function returning one (or a promise of one), asked before
// each request so a refreshed token is used at once. A turn's events are followed over
// fetch with the bearer token; transport 'eventsource' follows a turn just sent with an
// EventSource and its stream token instead (EventSource: the implementation, the global
// one by default), for pages whose proxies buffer fetch streams or that hand the URL on.
export function createClient({
  baseUrl = '',
  token,
  fetch: fetchFn = globalThis.fetch,
  transport = 'fetch',
  EventSource: EventSourceImpl = globalThis.EventSource,
} = {}) {
  const base = baseUrl.replace(/\/$/, '');
  const bearer = async () => (typeof token === 'function' ? await token() : token);

  async function request(method, path, body) {
    const headers = { Accept: 'application/json' };
    const t = await bearer();
    if (t) headers.Authorization = `Bearer ${t}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const resp = await fetchFn(`${base}/api/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await resp.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!resp.ok) {
      const err = data?.error ?? {};
      const retry = Number(resp.headers.get('Retry-After'));
      throw new PhaseflowError(resp.status, err.code ?? `http_${resp.status}`, err.message ?? resp.statusText, err,
        Number.isFinite(retry) && retry > 0 ? retry : undefined);
    }
    return data;
  }

  // openEvents makes one request for the events at path after lastId.
  const openEvents = (path) => async (lastId) => {
    const headers = { Accept: 'text/event-stream' };
    const t = await bearer();
    if (t) headers.Authorization = `Bearer ${t}`;
    if (lastId > 0) headers['Last-Event-ID'] = String(lastId);
    return fetchFn(`${base}/api/v1${path}`, { headers });
  };

  // follower answers how to follow the events at path: over EventSource when the client
  // was asked to and a stream token is at hand, else over fetch.
  const follower = (path, streamToken, streamOptions = {}) => (options) => {
    if (transport === 'eventsource' && streamToken) {
      const url = `${base}/api/v1${path}?stream_token=${encodeURIComponent(streamToken)}`;
      return followEventSource(url, { ...streamOptions, ...options, EventSourceImpl });
    }
    return followEvents(openEvents(path), { ...streamOptions, ...options });
  };

  const id = encodeURIComponent;
  const client = {
    request,
    sessions: {
      create: ({ title, locale } = {}) => request('POST', '/sessions', { title, locale }),
      get: (sessionId) => request('GET', `/sessions/${id(sessionId)}`),
      // list pages through every session, newest first, a page of limit at a time.
      list: ({ limit } = {}) => pages(request, '/sessions', 'sessions', limit),
      messages: (sessionId, { limit } = {}) => pages(request, `/sessions/${id(sessionId)}/messages`, 'messages', limit),
      transitions: (sessionId, { limit } = {}) =>
        pages(request, `/sessions/${id(sessionId)}/transitions`, 'transitions', limit),
      movePhase: (sessionId, to, reason) => request('POST', `/sessions/${id(sessionId)}/phase`, { to, reason }),
      // running answers the turn being generated in the session, followed from its start,
      // or null when none runs: how a page reloaded mid-reply picks the reply up again.
      running: async (sessionId, options = {}) => {
        const session = await request('GET', `/sessions/${id(sessionId)}`);
        if (!session.running_message_id) return null;
        return client.messages.follow(session.running_message_id, options);
      },
    },
    messages: {
      get: (messageId) => request('GET', `/messages/${id(messageId)}`),
      cancel: (messageId) => request('POST', `/messages/${id(messageId)}/cancel`),
      // follow follows an existing message (another device's, or after a reload) from
      // lastEventId on.
      follow: (messageId, { lastEventId = 0, signal, streamToken, onConnection } = {}) =>
        new Turn({ messageId, streamToken }, follower(`/messages/${id(messageId)}/events`, streamToken), client, {
          lastEventId,
          signal,
          onConnection,
        }),
    },
    strategies: {
      get: (strategyId) => request('GET', `/strategies/${id(strategyId)}`),
      confirm: (strategyId, { advance = true } = {}) =>
        request('POST', `/strategies/${id(strategyId)}/confirm`, { advance_to_stress_test: advance }),
    },
    skills: {
      list: async () => (await request('GET', '/skills')).skills ?? [],
      run: (name, input, { locale, sourceId } = {}) =>
        request('POST', `/skills/${id(name)}/runs`, { input, locale, source_id: sourceId }),
      startJob: (name, inputs, { locale } = {}) => request('POST', `/skills/${id(name)}/jobs`, { inputs, locale }),
      job: (jobId) => request('GET', `/skills/jobs/${id(jobId)}`),
      cancelJob: (jobId) => request('POST', `/skills/jobs/${id(jobId)}/cancel`),
      // followJob follows a job's progress: iterate it for its progress events, then its
      // completed or cancelled one; job.progress is the latest.
      followJob: (jobId, { lastEventId = 0, signal, streamToken } = {}) =>
        new JobProgress(
          jobId,
          follower(`/skills/jobs/${id(jobId)}/events`, streamToken, { names: ['progress', 'heartbeat'], terminals: jobEnds }),
          { lastEventId, signal },
        ),
    },
    // send posts text to a session (a new one when sessionId is omitted) and returns the
    // turn, following its events. clientRequestId makes a retried post the same turn.
    async send(sessionId, text, { clientRequestId, locale, runtimePolicy, signal, onConnection } = {}) {
      const body = { text, client_request_id: clientRequestId, locale, runtime_policy: runtimePolicy };
      const answer = sessionId
        ? await request('POST', `/sessions/${id(sessionId)}/messages`, body)
        : await request('POST', '/messages', body);
      const ids = {
        messageId: answer.message_id,
        requestId: answer.request_id,
        sessionId: answer.session_id,
        streamToken: answer.stream_token,
      };
      return new Turn(ids, follower(`/messages/${id(answer.message_id)}/events`, answer.stream_token), client, {
        signal,
        onConnection,
      });
    },
  };
  return client;
}

// pages is an async iterator over every item of a paginated list.
async function* pages(request, path, key, limit) {
  let cursor = '';
  do {
    const q = new URLSearchParams();
    if (limit) q.set('limit', String(limit));
    if (cursor) q.set('cursor', cursor);
    const page = await request('GET', `${path}${q.size ? `?${q}` : ''}`);
    yield* page[key] ?? [];
    cursor = page.next_cursor ?? '';
  } while (cursor);
}

// Turn is one message's generation as a client follows it: iterate it for its events
// ({event, data, id}), each once and in order across reconnects; it keeps what they say.
// Iterate it once; result() follows it to its end without looking at the events.
export class Turn {
  #events;
  #client;
  #reply = new ReplyAssembler();
  #iterated = false;
  #listeners = new Set();
  #version = 0;
  #result = null;

  // follow(options) answers the events as an async iterable (sse.js, eventsource.js).
  constructor({ messageId, requestId, sessionId, streamToken }, follow, client, { lastEventId = 0, signal, onConnection } = {}) {
    this.messageId = messageId;
    this.requestId = requestId;
    this.sessionId = sessionId;
    this.streamToken = streamToken; // for following from elsewhere while it is valid
    this.status = null; // the last status event's state
    this.toolCalls = []; // status tool_call events' tool: {server_label, name, state}
    this.metadata = null; // completed.metadata
    this.error = null; // the error event's data
    this.done = false;
    this.replyChecked = null; // true when the assembled reply had completed.reply_len
    this.reconnects = 0;
    this.#client = client;
    this.#events = follow({
      lastId: lastEventId,
      signal,
      onConnection: (state, reconnects) => {
        this.reconnects = reconnects;
        onConnection?.(state, reconnects);
        this.#changed();
      },
    });
  }

  // subscribe calls fn after every event the turn takes and answers the unsubscribe; with
  // version (a count of changes) it is what React's useSyncExternalStore asks for.
  subscribe(fn) {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  get version() {
    return this.#version;
  }

  #changed() {
    this.#version += 1;
    for (const fn of this.#listeners) fn();
  }

  // reply is the reply so far, by the retry rule; parsed is it read as ThinkingML.
  get reply() {
    return this.#reply.text();
  }

  get parsed() {
    return parseReply(this.reply);
  }

  get attempt() {
    return this.#reply.attempt;
  }

  // validation, genui and statePatch are completed.metadata's (null, [] and null before).
  get validation() {
    return this.metadata?.validation ?? null;
  }

  get genui() {
    return this.metadata?.genui ?? [];
  }

  get statePatch() {
    return this.metadata?.state_patch ?? null;
  }

  async *[Symbol.asyncIterator]() {
    if (this.#iterated) throw new Error('a Turn is iterated once');
    this.#iterated = true;
    try {
      for await (const ev of this.#events) {
        this.#take(ev);
        if (ev.event === 'completed') await this.#checkLength(ev.data);
        this.#changed();
        yield ev;
      }
    } finally {
      this.done = true;
      this.#changed();
    }
  }

  // result follows the turn to its end and answers it (the turn itself); asked again, it
  // answers the same promise.
  result() {
    this.#result ??= (async () => {
      for await (const _ of this) {
        // the turn keeps what each event says
      }
      return this;
    })();
    return this.#result;
  }

  cancel() {
    return this.#client.messages.cancel(this.messageId);
  }

  #take({ event, data }) {
    switch (event) {
      case 'content_delta':
        this.#reply.add(data);
        break;
      case 'status':
        this.status = data.state;
        if (data.state === 'retrying') this.#reply.retry(data);
        if (data.state === 'tool_call' && data.tool) this.toolCalls.push(data.tool);
        break;
      case 'completed':
        this.metadata = data.metadata ?? null;
        break;
      case 'error':
        this.error = { code: data.code, message: data.message, fallback: data.fallback };
        break;
    }
  }

  // checkLength compares the assembled reply with completed.reply_len; a reply that does
  // not match (a delta lost by something between) is read back from the server.
  async #checkLength(data) {
    if (!Number.isInteger(data.reply_len)) return;
    this.replyChecked = this.#reply.length === data.reply_len;
    if (this.replyChecked) return;
    const stored = await this.#client.messages.get(this.messageId);
    this.#reply = new ReplyAssembler();
    this.#reply.add({ seq: 1, delta: stored.content ?? '' });
  }
}

// jobEnds are the events that end a job's stream.
const jobEnds = ['completed', 'cancelled'];

// JobProgress is a JSON-skill job as a client follows it: iterate it for its events
// ({event: 'progress' | 'completed' | 'cancelled', data: {job_id, done, total, succeeded,
// failed}}); progress keeps the latest, ended says whether it finished or was cancelled.
export class JobProgress {
  #events;

  constructor(jobId, follow, { lastEventId = 0, signal } = {}) {
    this.jobId = jobId;
    this.progress = null;
    this.ended = null; // 'completed' or 'cancelled'
    this.#events = follow({ lastId: lastEventId, signal });
  }

  async *[Symbol.asyncIterator]() {
    for await (const ev of this.#events) {
      if (ev.event === 'heartbeat') continue;
      this.progress = ev.data;
      if (jobEnds.includes(ev.event)) this.ended = ev.event;
      yield ev;
    }
  }

  // result follows the job to its end and answers its last progress.
  async result() {
    for await (const _ of this) {
      // progress keeps the latest
    }
    return this.progress;
  }
}
