// Posts a message cross-origin (a CORS preflight: Authorization and a JSON body), then
// follows the reply with EventSource and ?stream_token=, as sse-contract.md §5 tells a
// client to. With "via" the stream goes through that base (a proxy that cuts connections)
// and EventSource reconnects on its own. The test reads window.result.
"use strict";
const params = new URLSearchParams(location.hash.slice(1));
const api = params.get("api");
const via = params.get("via") || api;
const token = params.get("token");
const result = { done: false, error: null, deltas: "", events: [], ids: [] };
window.result = result;

function finish() {
  result.done = true;
  document.getElementById("reply").textContent = result.deltas;
}

async function run() {
  const resp = await fetch(api + "/api/v1/messages", {
    method: "POST",
    headers: { Authorization: "Bearer " + token, "Content-Type": "application/json" },
    body: JSON.stringify({ text: params.get("text"), locale: "en" }),
  });
  result.postStatus = resp.status;
  result.requestId = resp.headers.get("X-Request-Id");
  const answer = await resp.json();
  result.messageId = answer.message_id;
  const es = new EventSource(via + answer.events_url + "?stream_token=" + encodeURIComponent(answer.stream_token));
  es.addEventListener("status", (e) => {
    result.ids.push(Number(e.lastEventId));
    const d = JSON.parse(e.data);
    if (d.state === "retrying") result.deltas = "";
    result.events.push("status:" + d.state);
  });
  es.addEventListener("content_delta", (e) => {
    result.ids.push(Number(e.lastEventId));
    result.deltas += JSON.parse(e.data).delta;
    result.events.push("content_delta");
  });
  es.addEventListener("completed", (e) => {
    result.ids.push(Number(e.lastEventId));
    result.completed = JSON.parse(e.data);
    result.events.push("completed");
    es.close();
    finish();
  });
  es.addEventListener("error", (e) => {
    if (e.data) { // the server's error event; EventSource's own has no data
      result.error = JSON.parse(e.data);
      es.close();
      finish();
    } else if (es.readyState === EventSource.CLOSED) {
      result.error = "EventSource closed: the cross-origin stream was refused";
      finish();
    }
  });
}

run().catch((err) => {
  result.error = String(err);
  finish();
});
