// A plain useChat page (@ai-sdk/react) pointed at Phaseflow's AI SDK routes: it loads the
// conversation's messages, resumes a running reply (resume: true), and shows each message's
// text parts, leaving out those Phaseflow marks discarded. The test drives it through
// window.send and reads window.chat.
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport } from 'ai';
import { createRoot } from 'react-dom/client';

const params = new URLSearchParams(location.hash.slice(1));
const base = params.get('base');
const chatId = params.get('chat');
const headers = { Authorization: `Bearer ${params.get('token')}` };

const shown = (part) => part.type === 'text' && part.providerMetadata?.phaseflow?.discarded !== true;

function Chat({ initial }) {
  const { messages, sendMessage, status, error } = useChat({
    id: chatId,
    messages: initial,
    resume: true,
    transport: new DefaultChatTransport({ api: `${base}/api/v1/ai-sdk/chat`, headers }),
  });
  window.send = (text) => sendMessage({ text });
  window.chat = {
    status,
    error: error ? String(error.message ?? error) : null,
    messages: messages.map((m) => ({ id: m.id, role: m.role, text: m.parts.filter(shown).map((p) => p.text).join('') })),
  };
  return (
    <main>
      {messages.map((m) => (
        <section key={m.id} className={m.role}>
          {m.parts.filter(shown).map((p, i) => <p key={i}>{p.text}</p>)}
        </section>
      ))}
      <footer id="status">{status}</footer>
    </main>
  );
}

const initial = await fetch(`${base}/api/v1/ai-sdk/chat/${encodeURIComponent(chatId)}/messages`, { headers }).then((r) => r.json());
createRoot(document.getElementById('root')).render(<Chat initial={initial} />);
