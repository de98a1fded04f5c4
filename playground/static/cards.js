// cards.js: renders GenUI cards (genui/schema.json, served at /api/v1/genui/schema.json),
// one function per card type. The server only sends cards that match the schema, so the
// renderers read the fields it types without guarding each one.
//
// ctx is what a card may do: send(text) posts a user message, confirm(strategyId) confirms a
// strategy, strategy(id) loads one; strategyId() is the strategy this turn or session is
// about, live() is false once a newer turn exists (an old question's buttons are disabled),
// canConfirm() is true while the session is in the strategy phase; locale is the session's.
// send and confirm answer whether they went through.

import { h, pretty } from './dom.js';
import { lineChart } from './chart.js';
import { words, say } from './i18n.js';

const renderers = {
  strategy_card: strategyCard,
  strategy_ref: strategyRef,
  backtest_charts: backtestCharts,
  choice_prompt: choicePrompt,
  metric_table: (c) => table(c.title, c.columns, c.rows),
  scenario_table: (c, ctx) => [c.scenario_set_id ? h('p', { class: 'muted' }, `${wordsFor(ctx).facts.scenarioSet} ${c.scenario_set_id}`) : null, table(c.title, c.columns, c.rows)],
  stress_report: stressReport,
  deployment_summary: deploymentSummary,
  rollout_status: rolloutStatus,
};

// The cards' own words by locale; the values they show (ids, statuses, figures) stay as sent.
const WORDS = {
  en: {
    settle: (f) => `Let's settle this: ${f}`, missing: 'Still needed:', columns: ['Scenario', 'Loss', 'Max drawdown'],
    confirm: 'Confirm strategy → stress test', confirmed: 'Confirmed', spec: 'Spec', noId: 'no strategy id yet',
    load: 'Load', strategy: 'Strategy', verdict: 'Verdict', deployment: 'Deployment', rolloutOf: 'Rollout of',
    facts: {
      name: 'name', status: 'status', backtest: 'backtest', updated: 'updated', report: 'report',
      scenarioSet: 'scenario set', worstScenario: 'worst scenario', worstDrawdown: 'worst drawdown', target: 'target',
      deployment: 'deployment', riskGuard: 'risk guard', limits: 'limits', trades: 'trades', pnl: 'P&L',
      breaches: 'breaches', blocker: 'blocker', breach: 'breach',
    },
  },
  zh: {
    settle: (f) => `我们来确定：${f}`, missing: '还需要：', columns: ['情景', '亏损', '最大回撤'],
    confirm: '确认策略 → 压力测试', confirmed: '已确认', spec: '规格', noId: '还没有策略 id',
    load: '加载', strategy: '策略', verdict: '结论', deployment: '部署', rolloutOf: '上线',
    facts: {
      name: '名称', status: '状态', backtest: '回测', updated: '更新于', report: '报告',
      scenarioSet: '情景集', worstScenario: '最差情景', worstDrawdown: '最大回撤', target: '目标',
      deployment: '部署', riskGuard: '风控', limits: '限额', trades: '交易数', pnl: '盈亏',
      breaches: '越限次数', blocker: '阻断原因', breach: '越限',
    },
  },
};

// wordsFor is the cards' words in the context's locale; pageWords the page's (i18n.js).
const wordsFor = (ctx) => WORDS[ctx?.locale] ?? WORDS.en;
const pageWords = (ctx) => words(ctx?.locale);

// named shows a code the card carries (a status, a metric, a tool's value) in the page's
// words of the context's locale, the code in its title.
function named(ctx, group, code, attrs = {}) {
  return h('span', { ...attrs, title: code }, say(pageWords(ctx), group, code));
}

export function renderCard(card, ctx) {
  const render = renderers[card.type];
  const w = pageWords(ctx);
  return h('section', { class: `card card-${card.type}`, dataset: { type: card.type } },
    h('header', { class: 'card-head' },
      h('span', { class: 'card-type', title: card.type }, say(w, 'cardType', card.type)),
      card.source === 'auto' ? h('span', { class: 'chip', title: 'source: auto' }, w.auto) : null),
    render ? render(card, ctx) : h('pre', {}, pretty(card)));
}

function strategyCard(card, ctx) {
  const w = wordsFor(ctx);
  const id = card.strategy_id ?? ctx.strategyId();
  const confirmed = card.status === 'confirmed';
  const button = h('button', { type: 'button', class: 'confirm primary', disabled: !id || confirmed || !ctx.canConfirm(), dataset: { confirmed: String(confirmed) } },
    confirmed ? w.confirmed : w.confirm);
  button.addEventListener('click', async () => {
    button.disabled = true;
    if (await ctx.confirm(id)) {
      button.textContent = w.confirmed;
      button.dataset.confirmed = 'true';
    } else button.disabled = false;
  });
  return [
    h('h3', {}, card.name, ' ', card.status ? named(ctx, 'value', card.status, { class: `chip status-${card.status}` }) : null),
    card.rules?.length ? h('ul', { class: 'rules' }, card.rules.map((r) => h('li', {}, r))) : null,
    h('details', { class: 'spec' }, h('summary', {}, w.spec), h('pre', {}, pretty(card.spec))),
    h('div', { class: 'actions' }, button, id ? h('span', { class: 'muted mono' }, id) : h('span', { class: 'muted' }, w.noId)),
  ];
}

function strategyRef(card, ctx) {
  const w = wordsFor(ctx);
  const f = w.facts;
  const out = h('dl', { class: 'facts' });
  const button = h('button', { type: 'button' }, w.load);
  button.addEventListener('click', async () => {
    button.disabled = true;
    const st = await ctx.strategy(card.strategy_id);
    const v = (code) => say(pageWords(ctx), 'value', code);
    if (st) out.replaceChildren(...facts({ [f.name]: st.name, [f.status]: v(st.status), [f.backtest]: v(st.backtest_status), [f.updated]: st.updated_at }));
    button.disabled = false;
  });
  return [
    h('p', {}, `${w.strategy} `, h('span', { class: 'mono' }, card.strategy_id), ' ',
      card.status ? named(ctx, 'value', card.status, { class: `chip status-${card.status}` }) : null, ' ', button),
    out,
  ];
}

function backtestCharts(card, ctx) {
  const metrics = Object.entries(card.metrics ?? {});
  return [
    lineChart(card.series, card.title),
    metrics.length ? h('dl', { class: 'facts' }, metrics.map(([k, v]) => [h('dt', { title: k }, say(pageWords(ctx), 'measure', k)), h('dd', {}, k.includes('drawdown') ? percent(v) : String(v))])) : null,
  ];
}

function choicePrompt(card, ctx) {
  const w = wordsFor(ctx);
  // The server's own card (source auto) labels each missing field in words; its button
  // asks to settle that field. A model's card sends the option's label as it is.
  const auto = card.source === 'auto';
  const choices = card.options
    ? card.options.map((o) => ({ label: o.label, text: auto ? w.settle(o.label) : o.label, id: o.id }))
    : card.missing_fields.map((f) => {
      const label = say(pageWords(ctx), 'field', f);
      return { label, text: w.settle(label), id: f };
    });
  const question = auto && card.options && card.question ? card.question.split('\n')[0] : card.question;
  const buttons = choices.map((c) => h('button', { type: 'button', class: 'choice', dataset: { choice: c.id } }, c.label));
  buttons.forEach((b, i) => b.addEventListener('click', async () => {
    if (!ctx.live()) return;
    buttons.forEach((x) => { x.disabled = true; });
    b.classList.add('chosen');
    if (!(await ctx.send(choices[i].text))) buttons.forEach((x) => { x.disabled = false; });
  }));
  return [h('p', { class: 'question' }, question ?? w.missing), h('div', { class: 'actions' }, buttons)];
}

function stressReport(card, ctx) {
  const w = wordsFor(ctx);
  const f = w.facts;
  return [
    h('dl', { class: 'facts' }, facts({
      [f.report]: card.stress_report_id,
      [f.scenarioSet]: card.scenario_set_id,
      [f.worstScenario]: say(pageWords(ctx), 'scenario', card.worst_scenario),
      [f.worstDrawdown]: card.worst_drawdown == null ? null : percent(card.worst_drawdown),
    })),
    card.verdict ? h('p', {}, `${w.verdict} `, named(ctx, 'value', card.verdict, { class: `chip verdict-${card.verdict}` })) : null,
    card.rows?.length ? table(null, card.columns ?? w.columns, card.rows) : null,
  ];
}

function deploymentSummary(card, ctx) {
  const w = wordsFor(ctx);
  const f = w.facts;
  const page = pageWords(ctx);
  const limits = Object.entries(card.limits ?? {}).map(([k, v]) => `${say(page, 'measure', k)} ${percent(v)}`).join(', ');
  const status = card.deployment_status;
  return [
    status ? h('p', {}, `${w.deployment} `, named(ctx, 'value', status, { class: `chip deploy-${status}` })) : null,
    h('dl', { class: 'facts' }, facts({
      [f.target]: say(page, 'value', card.target),
      [f.deployment]: card.deployment_id,
      [f.riskGuard]: say(page, 'value', card.risk_guard_status),
      [f.limits]: limits || null,
      [f.trades]: card.trades,
      [f.pnl]: card.pnl == null ? null : signedPercent(card.pnl),
      [f.breaches]: card.breaches,
      [f.blocker]: card.blocker_code ? say(page, 'blocker', card.blocker_code.toLowerCase()) : null,
      [f.breach]: card.breach ? `${say(page, 'measure', card.breach.limit)} ${percent(card.breach.value)} > ${percent(card.breach.limit_value)}` : null,
    })),
  ];
}

function rolloutStatus(card, ctx) {
  return [
    h('p', {}, `${wordsFor(ctx).rolloutOf} `, h('span', { class: 'mono' }, card.deployment_id), ' ',
      named(ctx, 'value', card.rollout_status, { class: `chip rollout-${card.rollout_status}` })),
    card.steps?.length
      ? h('ol', { class: 'steps' }, card.steps.map((st) => h('li', { class: `step-${st.status}` }, st.name, ' ', named(ctx, 'value', st.status, { class: 'chip' }))))
      : null,
  ];
}

function table(title, columns, rows) {
  return h('table', {},
    title ? h('caption', {}, title) : null,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', {}, c)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((cell) => h('td', {}, cell ?? ''))))));
}

// facts turns {label: value} into <dt>/<dd> pairs, leaving out empty values.
function facts(obj) {
  return Object.entries(obj)
    .filter(([, v]) => v != null && v !== '')
    .flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v))]);
}

function percent(fraction) {
  return `${Math.round(fraction * 1000) / 10}%`;
}

function signedPercent(fraction) {
  return `${fraction >= 0 ? '+' : ''}${percent(fraction)}`;
}
