// thinkingml.js: reads a ThinkingML reply (docs/thinkingml.md), also while it is still arriving,
// into the parts the page shows: the <thinking> phases with their titles, the <final>
// Markdown without its serp block, and the serp queries. It checks nothing: the server
// validates, and its verdict arrives in completed.metadata.validation.

const SERP_BLOCK = /<!--\s*<serp_queries>\s*\n([^\n]*)\n\s*<\/serp_queries>\s*-->/;

// parseReply answers {think, serp, phases: [{id, title, text}], final, serpQueries, raw}.
// final is null until <final> starts; raw is the whole text when the reply has neither
// <thinking> nor <final> (e.g. a model that ignored the contract).
export function parseReply(text) {
  const out = { think: block(text, 'think'), serp: block(text, 'serp'), phases: [], final: null, serpQueries: null, raw: null };
  const open = text.indexOf('<thinking>');
  let close = -1;
  if (open >= 0) {
    close = text.indexOf('</thinking>', open);
    out.phases = phases(text.slice(open + '<thinking>'.length, close < 0 ? text.length : close));
  }
  const finalOpen = text.indexOf('<final>', close < 0 ? 0 : close);
  if (finalOpen >= 0 && (open < 0 || close >= 0)) {
    let body = text.slice(finalOpen + '<final>'.length);
    const end = body.indexOf('</final>');
    body = withoutPartialTag(end < 0 ? body : body.slice(0, end));
    const serp = SERP_BLOCK.exec(body);
    if (serp) {
      out.serpQueries = queries(serp[1]);
      body = body.slice(0, serp.index) + body.slice(serp.index + serp[0].length);
    } else if (body.includes('<!--')) {
      body = body.slice(0, body.indexOf('<!--')); // the block is still arriving
    }
    out.final = body.trim();
  }
  if (open < 0 && finalOpen < 0 && text.trim() !== '') out.raw = text;
  return out;
}

// phases reads the <phase> elements of the text inside <thinking>, the last possibly
// unfinished.
function phases(inner) {
  const out = [];
  const re = /<phase\s+id="(\d+)"\s*>/g;
  const starts = [...inner.matchAll(re)];
  starts.forEach((m, i) => {
    const from = m.index + m[0].length;
    const to = i + 1 < starts.length ? starts[i + 1].index : inner.length;
    let body = inner.slice(from, to);
    const end = body.indexOf('</phase>');
    if (end >= 0) body = body.slice(0, end);
    let title = '';
    const t = /^\s*<title>([\s\S]*?)(<\/title>|$)/.exec(body);
    if (t) {
      title = t[1];
      body = body.slice(t[0].length);
    }
    out.push({ id: Number(m[1]), title: decode(withoutPartialTag(title)).trim(), text: decode(withoutPartialTag(body)).trim() });
  });
  return out;
}

function block(text, name) {
  const m = new RegExp(`<${name}>([\\s\\S]*?)(</${name}>|$)`).exec(text);
  return m && (text.indexOf('<thinking>') < 0 || m.index < text.indexOf('<thinking>')) ? decode(m[1]).trim() : null;
}

function queries(line) {
  try {
    const q = JSON.parse(line);
    return Array.isArray(q) ? q.filter((x) => typeof x === 'string') : null;
  } catch {
    return null;
  }
}

// withoutPartialTag cuts a tag still arriving at the end ("… <tit"), so it never flashes up
// as text.
function withoutPartialTag(s) {
  const lt = s.lastIndexOf('<');
  return lt >= 0 && !s.includes('>', lt) && /^<\/?[A-Za-z]*$/.test(s.slice(lt)) ? s.slice(0, lt) : s;
}

// decode resolves the five XML entities and numeric character references of plain text.
export function decode(s) {
  const named = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
  return s.replace(/&(lt|gt|amp|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, (m, e) => {
    if (e[0] !== '#') return named[e];
    const cp = e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
    return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
  });
}
