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

// Every card type narrows on card.type under --strict: each branch reads that type's own
// fields without a cast, and a card type added to the schema without a branch here fails
// to compile (the never in the default).
export function describeCard(card: GenUICard): string {
  switch (card.type) {
    case 'strategy_card':
      return `${card.name} ${card.status ?? ''} ${Object.keys(card.spec).length} ${card.rules?.join(',') ?? ''}`;
    case 'strategy_ref':
      return `${card.strategy_id} ${card.name ?? ''}`;
    case 'backtest_charts':
      return card.series.map((s) => `${s.name}:${s.points.length}`).join(' ');
    case 'choice_prompt': {
      const labels: string[] = (card.options ?? []).map((o) => o.label);
      return `${card.question ?? ''} ${labels.join('|')} ${card.missing_fields?.length ?? 0}`;
    }
    case 'metric_table':
      return `${card.columns.length}x${card.rows.length}`;
    case 'scenario_table':
      return `${card.scenario_set_id ?? ''} ${card.rows.length}`;
    case 'stress_report':
      return `${card.stress_report_id} ${card.verdict ?? ''} ${card.worst_drawdown ?? ''}`;
    case 'deployment_summary':
      return `${card.deployment_status ?? ''} ${card.blocker_code ?? ''} ${card.breach?.limit ?? ''}`;
    case 'rollout_status':
      return `${card.rollout_status} ${card.steps?.map((s) => s.status).join(',') ?? ''}`;
    default: {
      const unhandled: never = card;
      return unhandled;
    }
  }
}

// After a reload, the session's running turn is picked up where the page left it.
export async function resume(client: ReturnType<typeof createClient>, sessionId: string): Promise<string> {
  const session = await client.sessions.get(sessionId);
  const running: string | null | undefined = session.running_message_id;
  const turn = await client.sessions.running(sessionId);
  return `${running ?? ''} ${turn ? (await turn.result()).reply : ''}`;
}

export function useChat(client: ReturnType<typeof createClient>) {
  const { turn, send, error } = useSend(client, undefined);
  return { text: turn?.parsed.final ?? '', send, code: error?.code };
}
