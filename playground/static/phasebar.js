// phasebar.js: the session's phase bar (strategy → stress_test → deployment → completed)
// and its list of transitions (GET /sessions/{id}/transitions).

import { h } from './dom.js';
import { words, say } from './i18n.js';

export const PHASES = ['strategy', 'stress_test', 'deployment', 'completed'];

// renderPhaseBar marks the current phase, and the phases the session has been in.
export function renderPhaseBar(ol, phase, transitions) {
  const visited = new Set([PHASES[0], ...transitions.flatMap((t) => [t.from, t.to])]);
  ol.replaceChildren(...PHASES.map((p) => {
    const cls = [p === phase ? 'current' : '', visited.has(p) ? 'visited' : ''].filter(Boolean).join(' ');
    return h('li', { class: cls || null, dataset: { phase: p }, 'aria-current': p === phase ? 'step' : null }, words().phase[p] ?? p);
  }));
}

// renderTransitions lists the moves, oldest first.
export function renderTransitions(ol, countEl, transitions) {
  countEl.textContent = String(transitions.length);
  ol.replaceChildren(...transitions.map((t) => h('li', {},
    h('span', { title: `${t.from} → ${t.to}` }, `${say(words(), 'phase', t.from)} → ${say(words(), 'phase', t.to)}`), ' ',
    h('span', {}, t.reason), ' ',
    h('time', { class: 'muted', datetime: t.created_at }, new Date(t.created_at).toLocaleTimeString()),
    t.message_id ? null : h('span', { class: 'chip' }, words().manual))));
}
