// reference.js renders the served OpenAPI document (GET /api/v1/openapi.yaml) as a
// reference a person can read: its description, each operation by tag with its parameters,
// body and answers, and every schema. It builds DOM nodes only (Markdown through marked and
// DOMPurify, the YAML through js-yaml, all vendored: see fetch-vendor.sh), so it runs
// under the page's Content-Security-Policy.

import { load } from './vendor/js-yaml.mjs';
import { markdown } from './markdown.js';

const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

// el makes an element with text or children.
function el(tag, attrs = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  for (const c of children) n.append(c ?? '');
  return n;
}

// refName is the component a $ref names.
const refName = (ref) => ref.split('/').pop();

// schemaLink shows a schema in one line: a link to a named one, else its type.
function schemaLink(s) {
  if (!s) return el('span', {}, '—');
  if (s.$ref) return el('a', { href: '#schema-' + refName(s.$ref) }, refName(s.$ref));
  for (const k of ['oneOf', 'anyOf', 'allOf']) {
    if (s[k]) {
      const span = el('span', {}, k + ' ');
      s[k].forEach((x, i) => span.append(i ? ', ' : '', schemaLink(x)));
      return span;
    }
  }
  if (s.type === 'array') return el('span', {}, 'array of ', schemaLink(s.items));
  return el('code', {}, s.type ?? 'any');
}

// resolve follows a component $ref (parameters, responses) once.
function resolve(doc, x) {
  if (!x?.$ref) return x;
  const [, , kind, name] = x.$ref.split('/');
  return doc.components?.[kind]?.[name] ?? x;
}

function operation(doc, path, method, op) {
  const id = op.operationId || method + path;
  const box = el('section', { class: 'op', id: 'op-' + id },
    el('h4', {}, el('span', { class: 'method' }, method), path), el('strong', {}, op.summary ?? ''));
  if (op.description) box.append(markdown(op.description));
  const params = [...(doc.paths[path].parameters ?? []), ...(op.parameters ?? [])].map((p) => resolve(doc, p));
  if (params.length) {
    const t = el('table', {}, el('tr', {}, el('th', {}, 'parameter'), el('th', {}, 'in'), el('th', {}, 'schema'), el('th', {}, '')));
    for (const p of params) {
      t.append(el('tr', {}, el('td', {}, el('code', {}, p.name + (p.required ? '' : '?'))), el('td', {}, p.in),
        el('td', {}, schemaLink(p.schema)), el('td', {}, p.description ? markdown(p.description) : '')));
    }
    box.append(t);
  }
  const body = op.requestBody && resolve(doc, op.requestBody);
  if (body?.content) {
    for (const [type, media] of Object.entries(body.content)) {
      box.append(el('p', {}, 'Body (', el('code', {}, type), '): ', schemaLink(media.schema)));
    }
  }
  const answers = el('table', {}, el('tr', {}, el('th', {}, 'answer'), el('th', {}, ''), el('th', {}, 'body')));
  for (const [status, r0] of Object.entries(op.responses ?? {})) {
    const r = resolve(doc, r0);
    const bodies = el('td', {});
    for (const [type, media] of Object.entries(r.content ?? {})) {
      bodies.append(el('div', {}, el('code', {}, type), ' ', schemaLink(media.schema)));
      for (const [name, s] of Object.entries(media['x-events'] ?? {})) {
        bodies.append(el('div', {}, '· event ', el('code', {}, name), ' ', schemaLink(s)));
      }
    }
    answers.append(el('tr', {}, el('td', {}, el('code', {}, status)), el('td', {}, r.description ? markdown(r.description) : ''), bodies));
  }
  box.append(answers);
  return box;
}

function render(doc) {
  const article = document.getElementById('doc');
  const toc = document.getElementById('toc');
  article.replaceChildren(el('h2', {}, doc.info.title + ' ' + doc.info.version), markdown(doc.info.description ?? ''));
  const byTag = new Map((doc.tags ?? []).map((t) => [t.name, []]));
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const m of methods) {
      if (!item[m]) continue;
      const tag = item[m].tags?.[0] ?? 'other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push([path, m, item[m]]);
    }
  }
  const tags = new Map((doc.tags ?? []).map((t) => [t.name, t]));
  for (const [tag, ops] of byTag) {
    if (!ops.length) continue;
    toc.append(el('h3', {}, tag));
    article.append(el('h2', { id: 'tag-' + tag }, tag));
    if (tags.get(tag)?.description) article.append(el('div', { class: 'tagdesc' }, markdown(tags.get(tag).description)));
    for (const [path, m, op] of ops) {
      const box = operation(doc, path, m, op);
      toc.append(el('a', { href: '#' + box.id }, m.toUpperCase() + ' ' + path));
      article.append(box);
    }
  }
  toc.append(el('h3', {}, 'schemas'));
  article.append(el('h2', { id: 'schemas' }, 'Schemas'));
  for (const [name, s] of Object.entries(doc.components?.schemas ?? {})) {
    toc.append(el('a', { href: '#schema-' + name }, name));
    const d = el('details', { class: 'schema', id: 'schema-' + name }, el('summary', {}, name));
    if (s.description) d.append(markdown(s.description));
    d.append(el('pre', {}, JSON.stringify(s, null, 2)));
    article.append(d);
  }
}

fetch('/api/v1/openapi.yaml')
  .then((r) => (r.ok ? r.text() : Promise.reject(new Error('GET /api/v1/openapi.yaml: ' + r.status))))
  .then((text) => render(load(text)))
  .catch((err) => document.getElementById('doc').replaceChildren(el('p', { class: 'error' }, String(err))));
