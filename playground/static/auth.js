// auth.js: where the signed-in token lives (this tab's sessionStorage, so closing the tab
// signs out) and what the page shows of it.

const KEY = 'phaseflow.token';

export const tokens = {
  get: () => sessionStorage.getItem(KEY) ?? '',
  set: (token) => sessionStorage.setItem(KEY, token),
  clear: () => sessionStorage.removeItem(KEY),
};

// claims reads a JWT's payload for display (sub, role, exp). It does not verify anything:
// the server does that on every call.
export function claims(token) {
  try {
    const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const json = atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), '='));
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(json, (c) => c.charCodeAt(0))));
  } catch {
    return {};
  }
}

// Stream tokens are kept per message for as long as they are valid (about 10 minutes), so a
// reloaded page follows a reply still being generated the way it started (by EventSource);
// without one, the client follows it over fetch with the bearer token.
const STREAM_PREFIX = 'phaseflow.stream.';

export const streams = {
  remember: (messageId, streamToken) => sessionStorage.setItem(STREAM_PREFIX + messageId, streamToken),
  recall: (messageId) => sessionStorage.getItem(STREAM_PREFIX + messageId),
  forget: (messageId) => sessionStorage.removeItem(STREAM_PREFIX + messageId),
};
