// Type-checked (never run) by types.test.js: what a TypeScript user writes compiles
// against the declarations, and the generated shapes carry the fields the README uses.
import { createClient, PhaseflowError, type GenUICard, type Session } from '@phaseflow/client';
import { parseReply } from '@phaseflow/client/thinkingml';
import { useSend } from '@phaseflow/client/react';

export async function walk(): Promise<string | null> {
  const pf = createClient({ baseUrl: 'http://127.0.0.1:8080', token: async () => 'token' });
  const session: Session = await pf.sessions.create({ locale: 'zh' });
  const turn = await pf.send(session.id, 'Draft a BTC momentum strategy');
  for await (const ev of turn) {
    if (ev.event === 'content_delta') console.log(ev.data.seq, ev.data.delta);
    if (ev.event === 'status' && ev.data.state === 'retrying') console.log(turn.parsed.phases.length);
    if (ev.event === 'error') console.log(ev.data.code satisfies string);
  }
  const cards: GenUICard[] = turn.genui;
  if (turn.validation && !turn.validation.valid) console.log(turn.statePatch);
  for (const card of cards) console.log(card.type);
  for await (const s of pf.sessions.list({ limit: 20 })) console.log(s.phase);
  const job = pf.skills.followJob('job');
  for await (const p of job) console.log(p.data.done, p.data.total);
  try {
    await pf.messages.cancel(turn.messageId);
  } catch (err) {
    if (err instanceof PhaseflowError) console.log(err.code, err.retryAfter);
  }
  return parseReply(turn.reply).final;
}

export function useChat(client: ReturnType<typeof createClient>) {
  const { turn, send, error } = useSend(client, undefined);
  return { text: turn?.parsed.final ?? '', send, code: error?.code };
}
