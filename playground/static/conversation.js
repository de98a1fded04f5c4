// conversation.js: the open session: its header and phase bar, its turns (rebuilt from the
// stored messages, then live), sending a message and following its event stream, cancel,
// and the actions cards ask for (a choice, a strategy confirmation).

import { $ } from './dom.js';
import { StreamLostError } from './client/index.js';
import { streams } from './auth.js';
import { language, words, say } from './i18n.js';
import { TurnView } from './turn.js';
import { Follower } from './follow.js';
import { renderPhaseBar, renderTransitions } from './phasebar.js';

// How often, and how long, a turn whose stream could not be followed is polled instead.
const POLL_MS = 1500;
const POLL_LIMIT_MS = 10 * 60 * 1000;

export class Conversation {
  #latest = null; // the newest TurnView
  #stream = null; // the AbortController of the followed turn
  #busy = false;

  // api is an Api; notify(text, isError) shows a message; changed() is called when the
  // session list may have changed (title, phase).
  constructor(api, notify, changed) {
    this.api = api;
    this.notify = notify;
    this.changed = changed;
    this.session = null;
    this.turns = $('turns');
    this.follower = new Follower($('session'));
  }

  async open(sessionId) {
    this.close();
    const [session, messages, transitions] = await Promise.all([
      this.api.session(sessionId), this.api.messages(sessionId), this.api.transitions(sessionId)]);
    this.session = session;
    language.set(session.locale);
    $('session').hidden = false;
    $('empty').hidden = true;
    this.#showSession(transitions);
    const byId = new Map(messages.map((m) => [m.id, m]));
    this.turns.replaceChildren();
    this.#latest = null;
    let lastUser = null;
    for (const m of messages) {
      if (m.role === 'user') {
        lastUser = m;
        continue;
      }
      const asked = byId.get(m.reply_to) ?? lastUser;
      const view = TurnView.rebuilt(m, asked?.content ?? null, this.#context());
      this.#latest = view;
      this.turns.append(view.el);
    }
    const last = this.#latest;
    for (const b of this.turns.querySelectorAll('.card-choice_prompt button')) {
      b.disabled = !last?.el.contains(b); // only the newest question can be answered
    }
    if (last && !last.done) this.#resume(last);
    this.follower.follow(); // a session opens at its latest turn
    this.#setBusy(Boolean(last && !last.done));
  }

  close() {
    this.#stream?.abort();
    this.#stream = null;
    this.session = null;
    this.#latest = null;
    this.turns.replaceChildren();
    this.#setBusy(false);
  }

  // send posts text as the user's next message and follows the reply.
  async send(text) {
    if (this.#busy || !this.session || !text.trim()) return false;
    this.#setBusy(true);
    let answer;
    try {
      answer = await this.api.postMessage(this.session.id, text, newID());
    } catch (e) {
      this.notify(words().notSent(e.message), true);
      this.#setBusy(false);
      return false;
    }
    for (const b of this.turns.querySelectorAll('.card-choice_prompt button')) b.disabled = true;
    const view = new TurnView(answer.message_id, text, this.#context());
    this.#latest = view;
    this.turns.append(view.el);
    this.follower.follow();
    streams.remember(answer.message_id, answer.stream_token);
    this.#follow(view, answer.stream_token);
    return true;
  }

  async cancel(view) {
    try {
      await this.api.cancel(view.messageId);
      if (!view.done) view.setStatus(words().state.cancelling); // the stream's error event may be here first
    } catch (e) {
      this.notify(words().cancelFailed(e.message), true);
    }
  }

  // confirm confirms a strategy and asks for the move to stress_test.
  async confirm(strategyId) {
    try {
      const st = await this.api.confirmStrategy(strategyId);
      await this.refresh();
      this.notify(words().confirmed(st.name || strategyId, words().phase[this.session.phase] ?? this.session.phase));
      return true;
    } catch (e) {
      this.notify(words().confirmFailed(e.message), true);
      return false;
    }
  }

  // refresh reads the session and its transitions again (phase, artifacts, title).
  async refresh() {
    if (!this.session) return;
    const id = this.session.id;
    const [session, transitions] = await Promise.all([this.api.session(id), this.api.transitions(id)]);
    if (this.session?.id !== id) return;
    this.session = session;
    this.#showSession(transitions);
    this.changed();
  }

  // #follow follows view's turn through the client (its stream token when the tab has it)
  // and hands each event to the view; a stream the client cannot follow to its end (an
  // expired token, a server that keeps refusing) is polled instead.
  #follow(view, streamToken) {
    const stop = new AbortController();
    this.#stream = stop;
    const turn = this.api.client.messages.follow(view.messageId, {
      streamToken: streamToken ?? undefined,
      signal: stop.signal,
      onConnection: (state, n) => view.connection(state, n),
    });
    view.follows(turn);
    const end = () => {
      this.#stream = null;
      streams.forget(view.messageId);
      this.#setBusy(false);
      this.refresh().catch((e) => this.notify(e.message, true));
    };
    (async () => {
      for await (const { event, data } of turn) {
        if (event === 'status') view.status(data);
        else if (event === 'content_delta') view.delta();
        else if (event === 'completed') view.completed(data);
        else if (event === 'error') view.failed(data);
      }
      end();
    })().catch((e) => {
      if (stop.signal.aborted) return;
      this.#stream = null;
      if (e instanceof StreamLostError) this.#poll(view);
      else this.notify(e.message, true);
    });
  }

  // #resume follows a turn that was running when the page loaded, from its first event.
  #resume(stale) {
    const view = new TurnView(stale.messageId, stale.el.querySelector('.user-msg')?.textContent ?? null, this.#context());
    stale.el.replaceWith(view.el);
    this.#latest = view;
    this.#follow(view, streams.recall(stale.messageId));
  }

  // #poll waits for a turn whose stream is out of reach (an expired stream token) to end,
  // then shows it as stored.
  async #poll(view) {
    view.setStatus(words().unavailable);
    const until = Date.now() + POLL_LIMIT_MS;
    while (Date.now() < until && this.#latest === view) {
      const m = await this.api.message(view.messageId).catch(() => null);
      if (m && m.status !== 'pending' && m.status !== 'streaming') {
        const done = TurnView.rebuilt(m, view.el.querySelector('.user-msg')?.textContent ?? null, this.#context());
        view.el.replaceWith(done.el);
        this.#latest = done;
        break;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    streams.forget(view.messageId);
    this.#setBusy(false);
    await this.refresh().catch(() => {});
  }

  #showSession(transitions) {
    const s = this.session;
    $('session-title').textContent = s.title || words().untitled;
    $('session-locale').textContent = say(words(), 'locale', s.locale);
    $('session-locale').title = s.locale;
    $('session').dataset.phase = s.phase;
    renderPhaseBar($('phasebar'), s.phase, transitions);
    renderTransitions($('transition-list'), $('transition-count'), transitions);
    for (const b of this.turns.querySelectorAll('.card-strategy_card button.confirm')) {
      if (b.dataset.confirmed !== 'true') b.disabled = s.phase !== 'strategy';
    }
    $('composer').hidden = s.phase === 'completed';
    $('session-done').hidden = s.phase !== 'completed';
  }

  #setBusy(busy) {
    this.#busy = busy;
    $('send').disabled = busy;
    $('message').placeholder = busy ? words().generating : words().message;
  }

  // #context is what a turn's cards may do (cards.js).
  #context() {
    const conv = this;
    return {
      get locale() { return conv.session?.locale ?? 'en'; },
      send: (text) => this.send(text),
      confirm: (id) => this.confirm(id),
      strategy: (id) => this.api.strategy(id).catch((e) => { this.notify(e.message, true); return null; }),
      onCancel: (view) => this.cancel(view),
      forCards(cards, view) {
        return {
          ...this,
          strategyId: () => cards.find((c) => c.type === 'strategy_ref')?.strategy_id ?? conv.session?.artifacts?.strategy?.strategy_id ?? null,
          live: () => conv.#latest === view,
          canConfirm: () => conv.session?.phase === 'strategy',
        };
      },
    };
  }
}

// newID makes a client_request_id; crypto.randomUUID needs a secure context, which a
// server reached by a LAN address over http is not.
function newID() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}
