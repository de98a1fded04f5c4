// sessions.js: the signed-in user's sessions (GET /sessions), newest first.

import { h } from './dom.js';
import { words, say } from './i18n.js';

export function renderSessions(ul, sessions, currentId, open) {
  if (!sessions.length) {
    ul.replaceChildren(h('li', { class: 'muted' }, words().noSessions));
    return;
  }
  ul.replaceChildren(...sessions.map((s) => {
    const button = h('button', { type: 'button', class: s.id === currentId ? 'session current' : 'session', dataset: { sessionId: s.id } },
      h('span', { class: 'title' }, s.title || words().untitled),
      h('span', { class: 'sub' }, h('span', { class: 'chip', title: s.locale }, say(words(), 'locale', s.locale)), ' ',
        h('span', { class: `chip phase-${s.phase}`, title: s.phase }, say(words(), 'phase', s.phase))));
    button.addEventListener('click', () => open(s.id));
    return h('li', {}, button);
  }));
}
