// @phaseflow/client/react: a turn as React state. useTurn re-renders its component after
// every event the turn takes (through useSyncExternalStore, so concurrent renders see one
// consistent turn); useSend adds the sending. React is a peer dependency: this file is the
// only one that imports it.

import { useCallback, useEffect, useState, useSyncExternalStore } from 'react';

// useTurn follows turn (a Turn, or null; not iterated elsewhere) to its end and answers
// it, re-rendering on every event, so reading turn.parsed, turn.status or turn.metadata in
// render shows the latest. The turn is followed to its end even if the component goes:
// a turn ends by itself, and a remount picks it up where it is.
export function useTurn(turn) {
  useEffect(() => {
    turn?.result().catch(() => {}); // a lost stream: the turn stays as it was, done
  }, [turn]);
  useSyncExternalStore(
    useCallback((fn) => (turn ? turn.subscribe(fn) : () => {}), [turn]),
    () => (turn ? turn.version : 0),
    () => 0,
  );
  return turn;
}

// useSend answers {turn, send, error}: send(text, options) posts to sessionId through
// client and makes the new turn the one followed; error is a refused post's PhaseflowError.
// Unless resume is false, the turn running in the session when it mounts (a page reloaded
// mid-reply) is followed from its start until something is sent.
export function useSend(client, sessionId, { resume = true } = {}) {
  const [turn, setTurn] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (!resume || !sessionId) return undefined;
    let live = true;
    client.sessions
      .running(sessionId)
      .then((t) => live && t && setTurn((current) => current ?? t))
      .catch((err) => live && setError(err));
    return () => {
      live = false;
    };
  }, [client, sessionId, resume]);
  const send = useCallback(
    async (text, options) => {
      setError(null);
      try {
        const t = await client.send(sessionId, text, options);
        setTurn(t);
        return t;
      } catch (err) {
        setError(err);
        return null;
      }
    },
    [client, sessionId],
  );
  return { turn: useTurn(turn), send, error };
}
