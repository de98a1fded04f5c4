// dom.js: build DOM nodes without HTML strings, so no text from the server is ever parsed as
// markup (the one exception, the sanitised Markdown, is in markdown.js).

const SVG_NS = 'http://www.w3.org/2000/svg';

// h creates an HTML element. attrs: "class", "dataset" (an object), "on<event>" (a
// listener), true for a bare attribute, null/false/undefined to leave one out; anything else
// is set as an attribute. Children may be nodes, strings, numbers, arrays or null.
export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s creates an SVG element the same way.
export function s(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

function build(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value == null || value === false) continue;
    if (key === 'class') el.setAttribute('class', value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  return append(el, children);
}

// append adds children (see h) to el and returns el.
export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

// $ finds one element by id; a missing one is a bug in index.html, so it throws.
export function $(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html has no #${id}`);
  return el;
}

// pretty formats a JSON value for a <pre>.
export function pretty(value) {
  return JSON.stringify(value, null, 2);
}
