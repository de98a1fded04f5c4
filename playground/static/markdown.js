// markdown.js: turns the <final> Markdown into sanitised DOM. marked renders it to HTML and
// DOMPurify removes anything that could run script or style (both vendored, see
// fetch-vendor.sh); the result is a node tree, never assigned as innerHTML.

import { marked } from './vendor/marked.esm.js';
import DOMPurify from './vendor/purify.es.mjs';

export function markdown(md) {
  const html = marked.parse(md, { async: false, gfm: true, breaks: false });
  return DOMPurify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'],
    FORBID_ATTR: ['style'], // inline styles break the page's Content-Security-Policy
  });
}
