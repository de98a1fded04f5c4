// follow.js: keeps the end of the conversation in view as it grows (a reply's text, its
// statuses, tool calls and cards, a note below it), the way a chat does, until the reader
// scrolls away from the end to read; scrolling back to the end follows again.
//
// It watches the size of the conversation rather than being told of each change, so
// nothing that grows it can be forgotten. A reader's own scroll is told from ours by its
// direction: the page growing below never moves it, and ours only moves it down, so a
// scroll that leaves it above where we put it, away from the end, is the reader's.

// SLACK_PX is how far above the very end still counts as at the end (a reader's nudge, a
// rounding of the page's height).
const SLACK_PX = 48;

export class Follower {
  #following = false;
  #pinnedAt = 0; // the scroll position we last put the page at

  // content is the element whose growth is followed.
  constructor(content) {
    new ResizeObserver(() => this.#pin()).observe(content);
    window.addEventListener('scroll', () => {
      this.#following = atEnd() || (this.#following && window.scrollY >= this.#pinnedAt - 1);
    }, { passive: true });
  }

  // follow goes to the end now and keeps it in view (a message was sent, a session opened).
  follow() {
    this.#following = true;
    this.#pin();
  }

  #pin() {
    if (!this.#following) return;
    window.scrollTo(0, document.documentElement.scrollHeight);
    this.#pinnedAt = window.scrollY;
  }
}

// atEnd says whether the page is scrolled to (near) its end.
function atEnd() {
  const doc = document.documentElement;
  return window.innerHeight + window.scrollY >= doc.scrollHeight - SLACK_PX;
}
