// turn.js: one exchange on screen: the user's text and the assistant's turn, live while its
// events arrive or rebuilt from a stored message. It shows the status line, the <thinking>
// phases folded under their titles, the <final> Markdown, the serp queries, the validation
// badge, the GenUI cards, the tool-call timeline and the state patch.

import { h, pretty } from './dom.js';
import { words, say } from './i18n.js';
import { parseReply } from './client/thinkingml.js';
import { markdown } from './markdown.js';
import { renderCard } from './cards.js';

export class TurnView {
  #text = () => ''; // the reply so far: the followed Turn's, or the stored message's
  #turn = null; // the client's Turn this view follows, if live
  #started = performance.now();
  #frame = 0;
  #parts;

  // messageId names the assistant message; userText is what the user sent; ctx is the
  // cards' context (cards.js) plus onCancel().
  constructor(messageId, userText, ctx) {
    this.messageId = messageId;
    this.ctx = ctx;
    const w = words(ctx.locale);
    this.w = w;
    const p = {
      status: h('span', { class: 'status-line' }, w.state.sending),
      steps: h('ol', { class: 'steps-line' }),
      reconnects: h('span', { class: 'reconnects', title: 'Last-Event-ID resumes the stream' }, w.reconnects(0)),
      cancel: h('button', { type: 'button', class: 'cancel' }, w.cancel),
      thinking: h('div', { class: 'thinking' }),
      final: h('div', { class: 'final markdown' }),
      fallback: h('div', { class: 'fallback markdown', hidden: true }),
      raw: h('pre', { class: 'raw', hidden: true }),
      serp: h('div', { class: 'serp', hidden: true }),
      badge: h('div', { class: 'badges' }),
      cards: h('div', { class: 'cards' }),
      timeline: h('ol', { class: 'timeline' }),
      calls: h('div', { class: 'calls' }),
      tools: null,
      patch: h('div', { class: 'patch' }),
      meta: h('footer', { class: 'turn-meta' }),
    };
    p.tools = h('details', { class: 'tools', hidden: true }, h('summary', {}, w.toolCalls), p.timeline, p.calls);
    p.cancel.addEventListener('click', () => ctx.onCancel?.(this));
    this.#parts = p;
    this.el = h('div', { class: 'exchange' },
      userText != null ? h('div', { class: 'user-msg' }, userText) : null,
      h('article', { class: 'turn', dataset: { messageId, state: 'streaming', reconnects: '0' } },
        h('header', { class: 'turn-head' }, p.status, p.reconnects, p.cancel),
        p.steps, p.thinking, p.final, p.fallback, p.raw, p.serp, p.badge, p.cards, p.tools, p.patch, p.meta));
    this.article = this.el.querySelector('article');
  }

  // rebuilt shows a stored message (GET /sessions/{id}/messages) as a finished turn.
  static rebuilt(message, userText, ctx) {
    const view = new TurnView(message.id, userText, ctx);
    view.#parts.reconnects.hidden = true;
    view.#text = () => message.content ?? '';
    view.#render();
    if (message.status === 'completed') view.#finish('completed', message.metadata ?? {}, null);
    else if (message.status === 'pending' || message.status === 'streaming') view.setStatus(view.w.stillOpen);
    else view.#finish(message.status, { ...(message.metadata ?? {}), tool_calls: message.tool_calls ?? [] }, message.error);
    return view;
  }

  // Events of the stream, in the order docs/api.md gives them.

  status(d) {
    const p = this.#parts;
    const said = this.w.state[d.state] ?? d.state;
    switch (d.state) {
      case 'queued':
        this.setStatus(`${said} · ${this.w.phase[d.phase] ?? d.phase ?? '?'}`);
        break;
      case 'working':
        this.setStatus(said);
        break;
      case 'routed':
        this.setStatus(`${said} · ${say(this.w, 'provider', d.provider) || '?'} / ${d.resolved_model ?? '?'} · ${this.w.endpoint} ${d.endpoint_id ?? '-'}`);
        break;
      case 'tool_call': {
        const name = `${d.tool.server_label}/${d.tool.name}`;
        this.setStatus(`${said} · ${say(this.w, 'tool', d.tool.name)} · ${say(this.w, 'value', d.tool.state)}`);
        p.tools.hidden = false;
        p.timeline.append(h('li', { class: `tool-${d.tool.state}` }, h('span', { class: 'at' }, this.#since()), ` ${name} `, h('span', { class: 'chip' }, d.tool.state)));
        break;
      }
      case 'retrying':
        this.setStatus(`${said} · ${this.w.attempt(d.attempt)}`, d.reason);
        this.#schedule();
        break;
      case 'phase_changed':
        this.setStatus(`${said} · ${this.w.phase[d.from] ?? d.from} → ${this.w.phase[d.to] ?? d.to}`);
        break;
      default:
        this.setStatus(said);
    }
    const step = d.state === 'tool_call' ? `${say(this.w, 'tool', d.tool.name)} · ${say(this.w, 'value', d.tool.state)}` : said;
    p.steps.append(h('li', { class: `step-${d.state}`, title: d.state === 'tool_call' ? `${d.tool.name} ${d.tool.state}` : d.state }, step));
  }

  // follows makes the view show turn's reply, which the client assembles by the retry
  // rule; each event handed on afterwards re-renders it.
  follows(turn) {
    this.#turn = turn;
    this.#text = () => turn.reply;
  }

  delta() {
    this.#schedule();
  }

  connection(state, reconnects) {
    const p = this.#parts;
    p.reconnects.textContent = this.w.reconnects(reconnects);
    this.article.dataset.reconnects = String(reconnects);
    p.reconnects.classList.toggle('warn', state === 'reconnecting');
    if (state === 'reconnecting') p.reconnects.textContent += ` · ${this.w.reconnecting}`;
  }

  completed(d) {
    this.#render();
    this.#finish('completed', d.metadata ?? {}, null, d);
  }

  // failed takes the error event: its tool calls (tools that ran before the turn ended) and,
  // when the stream broke after partial text, the fallback reply shown under that text.
  failed(d) {
    this.#render();
    this.#finish(d.code === 'cancelled' ? 'cancelled' : 'error', { tool_calls: d.tool_calls, fallback_reply: d.fallback }, d);
  }

  // setStatus shows text on the status line; code (an error's, a retry's reason) is kept in
  // its title.
  setStatus(text, code) {
    this.#parts.status.textContent = text;
    if (code) this.#parts.status.title = code;
    else this.#parts.status.removeAttribute('title');
  }

  // #finish shows the metadata of a finished turn and freezes it.
  #finish(state, meta, error, completed) {
    const p = this.#parts;
    this.article.dataset.state = state;
    p.cancel.hidden = true;
    const said = this.w.state[state] ?? state;
    if (error) {
      this.article.dataset.errorCode = error.code;
      this.setStatus(`${said} · ${error.message}`, error.code);
    } else this.setStatus(said);
    const length = [...this.#text()].length;
    // A live turn's check is the client's (it reads a reply that does not match back).
    const ok = completed && (this.#turn ? this.#turn.replyChecked === true : completed.reply_len === length);
    p.badge.replaceChildren(...badges(meta, { length, ok }, completed, this.w));
    if (completed) this.article.dataset.replyOk = String(ok);
    p.cards.replaceChildren(...(meta.genui ?? []).map((c) => renderCard(c, this.ctx.forCards(meta.genui ?? [], this))));
    const calls = meta.tool_calls ?? [];
    if (calls.length) {
      p.tools.hidden = false;
      p.tools.querySelector('summary').textContent = `${this.w.toolCalls} (${calls.length})`;
      p.calls.replaceChildren(...calls.map((c) => toolCall(c, this.w)));
    }
    p.patch.replaceChildren(...patchParts(meta, this.w));
    p.meta.replaceChildren(...metaParts(meta, completed, this.w));
    const fallback = meta.fallback_reply ? parseReply(meta.fallback_reply).final : null;
    p.fallback.hidden = fallback == null;
    if (fallback != null) p.fallback.replaceChildren(markdown(fallback));
  }

  #since() {
    return `+${((performance.now() - this.#started) / 1000).toFixed(2)}s`;
  }

  #schedule() {
    if (this.#frame) return;
    this.#frame = requestAnimationFrame(() => {
      this.#frame = 0;
      this.#render();
    });
  }

  #render() {
    const p = this.#parts;
    const r = parseReply(this.#text());
    renderThinking(p.thinking, r, this.w);
    if (r.final != null) p.final.replaceChildren(markdown(r.final));
    p.raw.hidden = r.raw == null;
    p.raw.textContent = r.raw ?? '';
    p.serp.hidden = !r.serpQueries?.length;
    p.serp.replaceChildren(h('span', { class: 'label' }, this.w.serpQueries), ...(r.serpQueries ?? []).map((q) => h('span', { class: 'chip query' }, q)));
  }

  get done() {
    return this.article.dataset.state !== 'streaming';
  }
}

// renderThinking updates the folded phases in place, so a phase the user opened stays open
// while more text arrives.
function renderThinking(el, r, w) {
  const items = [];
  if (r.think) items.push({ id: 'think', title: w.scratch, text: r.think });
  if (r.serp) items.push({ id: 'serp', title: w.searchNotes, text: r.serp });
  for (const ph of r.phases) items.push({ id: ph.id, title: `${ph.id}. ${ph.title || '…'}`, text: ph.text });
  items.forEach((it, i) => {
    let d = el.children[i];
    if (!d) {
      d = h('details', { class: 'phase' }, h('summary', {}), h('p', {}));
      el.append(d);
    }
    d.querySelector('summary').textContent = it.title;
    d.querySelector('p').textContent = it.text;
  });
  while (el.children.length > items.length) el.lastElementChild.remove();
}

// badges are the verdict's, the reply_len check's (reply: the assembled length, and
// whether it matched) and the attempts'.
function badges(meta, reply, completed, w) {
  const out = [];
  const v = meta.validation;
  if (v === undefined) return out;
  if (v === null) out.push(h('span', { class: 'badge' }, w.notValidated));
  else if (v.valid) out.push(h('span', { class: 'badge ok' }, w.valid));
  else {
    const codes = [...new Set((v.errors ?? []).map((e) => e.code))];
    out.push(h('span', { class: 'badge bad', title: codes.join(', ') }, w.invalid, w.invalidCount((v.errors ?? []).length)));
  }
  for (const x of v?.warnings ?? []) out.push(h('span', { class: 'badge warn', title: x.code }, x.message ?? say(w, 'warning', x.code)));
  if (completed) {
    const { ok } = reply;
    out.push(h('span', { class: `badge ${ok ? 'ok' : 'bad'}`, title: 'completed.reply_len against the assembled text' },
      ok ? w.replyLength(completed.reply_len) : w.replyLengthOff(completed.reply_len, reply.length)));
  }
  if ((meta.attempts ?? 1) > 1) out.push(h('span', { class: 'badge warn' }, w.attempts(meta.attempts)));
  if (meta.fallback) out.push(h('span', { class: 'badge warn' }, w.fallbackReply));
  return out;
}

function toolCall(c, w) {
  return h('details', { class: `call call-${c.status}` },
    h('summary', {}, `${c.server_label}/${c.name} `, h('span', { class: 'chip' }, c.status), ` ${c.duration_ms} ms`),
    h('div', { class: 'label' }, w.arguments), h('pre', {}, pretty(c.arguments)),
    c.output ? [h('div', { class: 'label' }, w.output), h('pre', {}, prettyText(c.output))] : null,
    c.error ? [h('div', { class: 'label' }, w.error), h('pre', { class: 'error' }, c.error)] : null);
}

function patchParts(meta, w) {
  const out = [];
  if (meta.phase_change) {
    const { from, to, reason } = meta.phase_change;
    out.push(h('p', { class: 'phase-change' }, w.phaseMove(w.phase[from] ?? from, w.phase[to] ?? to, reason)));
  }
  if (meta.state_patch != null) {
    out.push(h('details', { class: 'state-patch' }, h('summary', {}, w.patchApplied), h('pre', {}, pretty(meta.state_patch))));
  }
  if (meta.rejected_patch) {
    out.push(h('details', { class: 'rejected', open: true }, h('summary', {}, w.patchRefused),
      h('ul', {}, (meta.rejected_patch.reasons ?? []).map((r) => h('li', {}, r))), h('pre', {}, pretty(meta.rejected_patch.patch))));
  }
  if (meta.dropped_genui?.length) {
    out.push(h('details', { class: 'rejected' }, h('summary', {}, w.dropped(meta.dropped_genui.length)),
      h('ul', {}, meta.dropped_genui.map((r) => h('li', {}, r)))));
  }
  if (meta.problems?.length) {
    out.push(h('details', { class: 'rejected', open: true }, h('summary', {}, w.problems),
      h('ul', {}, meta.problems.map((r) => h('li', {}, r)))));
  }
  if (meta.missing_fields?.length) { // the fields by name, folded: the cards ask for them in words
    out.push(h('details', { class: 'missing' }, h('summary', {}, w.stillNeeded(meta.missing_fields.length)),
      meta.missing_fields.map((f) => h('span', { class: 'chip mono' }, f))));
  }
  return out;
}

function metaParts(meta, completed, w) {
  const bits = [];
  if (meta.phase) bits.push(`${w.phase[meta.phase] ?? meta.phase}${meta.stage ? ` / ${say(w, 'stage', meta.stage)}` : ''}`);
  if (completed) bits.push(`${say(w, 'provider', completed.provider) || '?'} · ${completed.resolved_model ?? '?'}`);
  if (meta.usage) bits.push(w.tokens(meta.usage.input_tokens, meta.usage.output_tokens));
  return bits.map((b) => h('span', {}, b));
}

function prettyText(s) {
  try {
    return pretty(JSON.parse(s));
  } catch {
    return s;
  }
}
