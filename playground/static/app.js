// app.js: the page's entry point. It signs in (a pasted token, or in development the dev
// token the server hands out), lists the user's sessions, creates new ones, and hands the
// open session to a Conversation; the Skills view runs JSON skills. Everything it shows is
// built by the other modules.

import { $ } from './dom.js';
import { Api } from './api.js';
import { tokens, claims } from './auth.js';
import { Conversation } from './conversation.js';
import { renderSessions } from './sessions.js';
import { Skills } from './skills.js';
import { words } from './i18n.js';

const api = new Api(tokens.get);
const conversation = new Conversation(api, notify, () => loadSessions().catch(() => {}));
const skills = new Skills(api, notify);
let devToken = null;

function boot() {
  history.scrollRestoration = 'manual'; // a reload opens at the latest turn, not where it was
  $('signin').addEventListener('submit', (e) => {
    e.preventDefault();
    signIn($('token').value.trim());
  });
  $('dev-token').addEventListener('click', () => {
    $('token').value = devToken;
    signIn(devToken);
  });
  $('signout').addEventListener('click', signOut);
  $('new-session').addEventListener('submit', (e) => {
    e.preventDefault();
    createSession().catch((err) => notify(words().couldNotCreate(err.message), true));
  });
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const box = $('message');
    conversation.send(box.value).then((sent) => { if (sent) box.value = ''; });
  });
  $('message').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('show-sessions').addEventListener('click', () => {
    $('app').classList.toggle('sessions-open');
    window.scrollTo(0, 0);
  });
  $('view-chat').addEventListener('click', () => showView('chat'));
  $('view-skills').addEventListener('click', () => showView('skills'));
  skills.bind();
  window.addEventListener('hashchange', () => openFromHash());
  offerDevToken();
  if (tokens.get()) signIn(tokens.get());
}

// offerDevToken shows the dev-token button when the server is in development mode (no JWT
// secret configured, loopback address); elsewhere the route answers 404 and nothing shows.
async function offerDevToken() {
  try {
    devToken = (await api.devToken()).token;
    $('dev-token').hidden = false;
  } catch {
    devToken = null;
  }
}

async function signIn(token) {
  if (!token) return;
  tokens.set(token);
  try {
    await loadSessions();
  } catch (e) {
    tokens.clear();
    notify(e.status === 401 ? words().tokenRefused : words().signInFailed(e.message), true);
    return;
  }
  const c = claims(token);
  $('user').textContent = `${c.sub ?? '?'}${c.role === 'admin' ? ' (admin)' : ''}`;
  $('signin').hidden = true;
  $('whoami').hidden = false;
  $('app').hidden = false;
  $('welcome').hidden = true;
  await openFromHash();
}

// showView switches between the chat and the JSON skills.
function showView(view) {
  $('app').hidden = view !== 'chat';
  $('skills-view').hidden = view !== 'skills';
  $('view-chat').classList.toggle('current', view === 'chat');
  $('view-skills').classList.toggle('current', view === 'skills');
  if (view === 'skills') skills.show().catch((e) => notify(words().couldNotListSkills(e.message), true));
}

function signOut() {
  tokens.clear();
  conversation.close();
  skills.stopJob();
  showView('chat');
  $('signin').hidden = false;
  $('whoami').hidden = true;
  $('app').hidden = true;
  $('app').classList.remove('in-session', 'sessions-open');
  $('session').hidden = true;
  $('empty').hidden = false;
  $('welcome').hidden = false;
  $('token').value = '';
  history.replaceState(null, '', location.pathname);
}

async function loadSessions() {
  const sessions = await api.sessions();
  renderSessions($('sessions'), sessions, conversation.session?.id, (id) => { location.hash = id; });
  return sessions;
}

async function createSession() {
  const s = await api.createSession($('new-title').value.trim() || undefined, $('new-locale').value);
  $('new-title').value = '';
  await loadSessions();
  location.hash = s.id; // hashchange opens it
}

// openFromHash opens the session named in the URL (#<id>), so a reload keeps it open.
async function openFromHash() {
  const id = decodeURIComponent(location.hash.slice(1));
  if (!id || !tokens.get()) return;
  try {
    await conversation.open(id);
    $('app').classList.add('in-session');
    $('app').classList.remove('sessions-open');
    await loadSessions();
    $('message').focus();
  } catch (e) {
    notify(words().couldNotOpen(e.message), true);
  }
}

let toastTimer = 0;
function notify(text, isError = false) {
  const t = $('toast');
  t.textContent = text;
  t.classList.toggle('error', isError);
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, 6000);
}

boot();
