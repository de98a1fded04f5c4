// @phaseflow/client: Phaseflow's API for browsers and Node 20, over fetch. Every route a
// front end uses returns the API's JSON or throws a PhaseflowError carrying its code; a
// message's turn is followed as an async iterator of its events, across dropped
// connections, while the turn keeps the reply assembled by the contract's retry rule and
// read as ThinkingML (thinking phases, final text, serp queries).

import { ReplyAssembler } from './reply.js';
import { parseReply } from './thinkingml.js';
import { followEvents } from './sse.js';

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
// each request so a refreshed token is used at once.
export function createClient({ baseUrl = '', token, fetch: fetchFn = globalThis.fetch } = {}) {
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

  // openEvents makes one request for a message's events after lastId.
  const openEvents = (messageId) => async (lastId) => {
    const headers = { Accept: 'text/event-stream' };
    const t = await bearer();
    if (t) headers.Authorization = `Bearer ${t}`;
    if (lastId > 0) headers['Last-Event-ID'] = String(lastId);
    return fetchFn(`${base}/api/v1/messages/${encodeURIComponent(messageId)}/events`, { headers });
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
    },
    messages: {
      get: (messageId) => request('GET', `/messages/${id(messageId)}`),
      cancel: (messageId) => request('POST', `/messages/${id(messageId)}/cancel`),
      // follow follows an existing message (another device's, or after a reload) from
      // lastEventId on.
      follow: (messageId, { lastEventId = 0, signal } = {}) =>
        new Turn({ messageId }, openEvents(messageId), client, { lastEventId, signal }),
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
    },
    // send posts text to a session (a new one when sessionId is omitted) and returns the
    // turn, following its events. clientRequestId makes a retried post the same turn.
    async send(sessionId, text, { clientRequestId, locale, runtimePolicy, signal } = {}) {
      const body = { text, client_request_id: clientRequestId, locale, runtime_policy: runtimePolicy };
      const answer = sessionId
        ? await request('POST', `/sessions/${id(sessionId)}/messages`, body)
        : await request('POST', '/messages', body);
      return new Turn(
        { messageId: answer.message_id, requestId: answer.request_id, sessionId: answer.session_id },
        openEvents(answer.message_id),
        client,
        { signal },
      );
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

  constructor({ messageId, requestId, sessionId }, open, client, { lastEventId = 0, signal } = {}) {
    this.messageId = messageId;
    this.requestId = requestId;
    this.sessionId = sessionId;
    this.status = null; // the last status event's state
    this.toolCalls = []; // status tool_call events' tool: {server_label, name, state}
    this.metadata = null; // completed.metadata
    this.error = null; // the error event's data
    this.done = false;
    this.replyChecked = null; // true when the assembled reply had completed.reply_len
    this.#client = client;
    this.#events = followEvents(open, { lastId: lastEventId, signal });
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

  async *[Symbol.asyncIterator]() {
    if (this.#iterated) throw new Error('a Turn is iterated once');
    this.#iterated = true;
    for await (const ev of this.#events) {
      this.#take(ev);
      if (ev.event === 'completed') await this.#checkLength(ev.data);
      yield ev;
    }
    this.done = true;
  }

  // result follows the turn to its end and answers it (the turn itself).
  async result() {
    for await (const _ of this) {
      // the turn keeps what each event says
    }
    return this;
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
