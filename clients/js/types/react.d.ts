// @phaseflow/client/react's types (src/react.js).
import type { Client, PhaseflowError, SendOptions, Turn } from './index.js';

/** Follows turn to its end and re-renders on each of its events. */
export function useTurn(turn: Turn | null): Turn | null;

/**
 * Sends to sessionId and follows the turn just sent; unless resume is false, the turn
 * running in the session when it mounts (a page reloaded mid-reply) is followed first.
 */
export function useSend(
  client: Client,
  sessionId: string | undefined,
  options?: { resume?: boolean },
): { turn: Turn | null; send: (text: string, options?: SendOptions) => Promise<Turn | null>; error: PhaseflowError | null };
