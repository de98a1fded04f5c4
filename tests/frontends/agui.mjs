// Runs Phaseflow's AG-UI route with AG-UI's own HttpAgent (package "@ag-ui/client", pinned
// in package-lock.json) and prints what the agent holds afterwards as JSON:
//
//   node agui.mjs BASE TOKEN THREAD RUN TEXT [USER_MESSAGE_ID]
//
// Output: {messages, state, events (types in order), activities, error}.
import { HttpAgent } from '@ag-ui/client';

const [base, token, threadId, runId, text, userId] = process.argv.slice(2);
const agent = new HttpAgent({
  url: `${base}/api/v1/ag-ui`,
  headers: { Authorization: `Bearer ${token}` },
  threadId,
  initialMessages: [{ id: userId ?? 'u1', role: 'user', content: text }],
});
const events = [];
const activities = [];
let error = null;
try {
  await agent.runAgent({ runId }, {
    onEvent: ({ event }) => { events.push(event.type); },
    onActivitySnapshotEvent: ({ event }) => { activities.push({ activityType: event.activityType, content: event.content }); },
  });
} catch (e) {
  error = String(e?.message ?? e);
}
console.log(JSON.stringify({ messages: agent.messages, state: agent.state, events, activities, error }));
