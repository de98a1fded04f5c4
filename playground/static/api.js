// api.js: the HTTP API of Phaseflow (README "Routes"), one method per route the page uses.
// Every call sends the signed-in user's token; an error answer becomes an ApiError carrying
// the server's {"error": {"code", "message"}}.

export class ApiError extends Error {
  constructor(status, code, message, detail) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

export class Api {
  // token is a function returning the current bearer token ('' when signed out).
  constructor(token) {
    this.token = token;
  }

  async request(method, path, body) {
    const headers = { Accept: 'application/json' };
    const token = this.token();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const resp = await fetch(`/api/v1${path}`, {
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
      throw new ApiError(resp.status, err.code ?? `http_${resp.status}`, err.message ?? resp.statusText, err);
    }
    return data;
  }

  // devToken answers {token, sub, expires_at} in development mode, and 404 otherwise.
  devToken() {
    return this.request('GET', '/dev/token');
  }

  async sessions() {
    return (await this.request('GET', '/sessions')).sessions ?? [];
  }

  createSession(title, locale) {
    return this.request('POST', '/sessions', { title, locale });
  }

  session(id) {
    return this.request('GET', `/sessions/${encodeURIComponent(id)}`);
  }

  async messages(sessionId) {
    return (await this.request('GET', `/sessions/${encodeURIComponent(sessionId)}/messages`)).messages ?? [];
  }

  async transitions(sessionId) {
    return (await this.request('GET', `/sessions/${encodeURIComponent(sessionId)}/transitions`)).transitions ?? [];
  }

  // postMessage starts a turn and answers {message_id, request_id, events_url, stream_token}.
  postMessage(sessionId, text, clientRequestId) {
    return this.request('POST', `/sessions/${encodeURIComponent(sessionId)}/messages`, {
      text,
      client_request_id: clientRequestId,
    });
  }

  message(id) {
    return this.request('GET', `/messages/${encodeURIComponent(id)}`);
  }

  cancel(messageId) {
    return this.request('POST', `/messages/${encodeURIComponent(messageId)}/cancel`);
  }

  strategy(id) {
    return this.request('GET', `/strategies/${encodeURIComponent(id)}`);
  }

  // confirmStrategy confirms and asks for the move to stress_test (orchestrator.md §3).
  confirmStrategy(id) {
    return this.request('POST', `/strategies/${encodeURIComponent(id)}/confirm`, { advance_to_stress_test: true });
  }

  async skills() {
    return (await this.request('GET', '/skills')).skills ?? [];
  }

  // runSkill runs a JSON skill once and answers the run, whatever its outcome.
  runSkill(name, input, locale, sourceId) {
    return this.request('POST', `/skills/${encodeURIComponent(name)}/runs`, { input, locale, source_id: sourceId || undefined });
  }

  skillRun(id) {
    return this.request('GET', `/skills/runs/${encodeURIComponent(id)}`);
  }

  // postSkillJob answers {job_id, status, total, events_url, stream_token}.
  postSkillJob(name, inputs, locale) {
    return this.request('POST', `/skills/${encodeURIComponent(name)}/jobs`, { inputs, locale });
  }

  skillJob(id) {
    return this.request('GET', `/skills/jobs/${encodeURIComponent(id)}`);
  }

  cancelSkillJob(id) {
    return this.request('POST', `/skills/jobs/${encodeURIComponent(id)}/cancel`);
  }
}
