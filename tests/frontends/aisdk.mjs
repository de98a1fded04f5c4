// Drives Phaseflow's AI SDK routes with the AI SDK's own DefaultChatTransport and
// readUIMessageStream (package "ai", pinned in package-lock.json), as a useChat page would,
// and prints what the SDK assembled as JSON:
//
//   node aisdk.mjs send   BASE TOKEN CHAT TEXT [MESSAGE_ID]   post a message, read the stream
//   node aisdk.mjs cut    BASE TOKEN CHAT TEXT                post, stop reading after the first
//                                                           text delta, then resume
//   node aisdk.mjs resume BASE TOKEN CHAT                     reconnect to the running turn
//
// Output: {status, message, text, discarded, errors, chunks}; text joins the assembled text
// parts that are not marked discarded, discarded those that are.
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const [mode, base, token, chatId, text, messageId] = process.argv.slice(2);
const transport = new DefaultChatTransport({
  api: `${base}/api/v1/ai-sdk/chat`,
  headers: { Authorization: `Bearer ${token}` },
});
const errors = [];
const chunks = [];

// tap records each chunk's type as the SDK reads it.
function tap(stream, until) {
  const reader = stream.getReader();
  return new ReadableStream({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      chunks.push(value.type);
      controller.enqueue(value);
      if (until && until(value)) {
        await reader.cancel();
        controller.close();
      }
    },
    cancel(reason) { return reader.cancel(reason); },
  });
}

async function assemble(stream) {
  let last;
  for await (const message of readUIMessageStream({ stream, onError: (e) => errors.push(String(e?.message ?? e)) })) {
    last = message;
  }
  return last;
}

function summary(status, message) {
  const parts = message?.parts ?? [];
  const discardedPart = (p) => p.providerMetadata?.phaseflow?.discarded === true;
  const join = (keep) => parts.filter((p) => p.type === 'text' && keep(p)).map((p) => p.text).join('');
  return { status, message, text: join((p) => !discardedPart(p)), discarded: join(discardedPart), errors, chunks };
}

async function send(until) {
  const stream = await transport.sendMessages({
    chatId,
    trigger: 'submit-message',
    messageId: undefined,
    messages: [{ id: messageId ?? `u-${Date.now()}`, role: 'user', parts: [{ type: 'text', text }] }],
    abortSignal: undefined,
  });
  return assemble(tap(stream, until));
}

async function resume() {
  const stream = await transport.reconnectToStream({ chatId });
  if (stream === null) return { status: 204 };
  return { status: 200, message: await assemble(tap(stream)) };
}

try {
  switch (mode) {
    case 'send':
      console.log(JSON.stringify(summary(200, await send())));
      break;
    case 'cut': {
      await send((c) => c.type === 'text-delta');
      chunks.length = 0;
      const r = await resume();
      console.log(JSON.stringify(summary(r.status, r.message)));
      break;
    }
    case 'resume': {
      const r = await resume();
      console.log(JSON.stringify(summary(r.status, r.message)));
      break;
    }
    default:
      throw new Error(`unknown mode ${mode}`);
  }
} catch (e) {
  console.log(JSON.stringify({ status: 0, errors: [...errors, String(e?.message ?? e)], chunks }));
}
