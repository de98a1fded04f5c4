// reply.js: assembles a reply from content_delta events by the contract's rule
// (docs/api.md): join the deltas in seq order; on status "retrying" drop every delta
// with seq <= discard_through_seq, because they belong to the attempt the server refused.
//
// It is also right for servers older than that rule, which restart seq at 1 on the new
// attempt and send no discard_through_seq: then everything received before "retrying" is
// dropped, and deltas are keyed by (attempt, seq) so the restarted numbers cannot collide
// with the refused attempt's.

export class ReplyAssembler {
  #deltas = new Map(); // "attempt:seq" -> {attempt, seq, delta}
  #discardThrough = 0;
  #attempt = 1;
  #text = null; // cache of text()

  // add takes a content_delta's data; it answers false for a delta it drops (refused
  // attempt, or already seen).
  add({ seq, delta, attempt = 1 }) {
    if (seq <= this.#discardThrough || attempt < this.#attempt) return false;
    const key = `${attempt}:${seq}`;
    if (this.#deltas.has(key)) return false;
    this.#deltas.set(key, { attempt, seq, delta });
    this.#text = null;
    return true;
  }

  // retry takes a status "retrying" event's data.
  retry({ attempt, discard_through_seq: discardThrough }) {
    if (Number.isInteger(discardThrough)) {
      this.#discardThrough = Math.max(this.#discardThrough, discardThrough);
      for (const [key, d] of this.#deltas) if (d.seq <= this.#discardThrough) this.#deltas.delete(key);
    } else {
      this.#deltas.clear();
    }
    if (Number.isInteger(attempt)) this.#attempt = Math.max(this.#attempt, attempt);
    this.#text = null;
  }

  text() {
    this.#text ??= [...this.#deltas.values()]
      .sort((a, b) => a.attempt - b.attempt || a.seq - b.seq)
      .map((d) => d.delta)
      .join('');
    return this.#text;
  }

  // length is the reply's length in Unicode code points, what completed.reply_len counts.
  get length() {
    return [...this.text()].length;
  }

  get attempt() {
    return this.#attempt;
  }
}
