// api.js: the HTTP API of Phaseflow (docs/api.md, "Routes"), one method per route the page uses,
// over the JavaScript client's request (clients/js): every call sends the signed-in user's
// token, and an error answer becomes a PhaseflowError carrying the server's code and message.

import { createClient } from './client/index.js';

export class Api {
  // token is a function returning the current bearer token ('' when signed out). A turn is
  // followed through the client: by EventSource and its stream token while the tab holds
  // one, else over fetch with the bearer token.
  constructor(token) {
    this.client = createClient({ baseUrl: '', token, transport: 'eventsource' });
    this.request = this.client.request;
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

  // confirmStrategy confirms and asks for the move to stress_test (docs/turn.md).
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
