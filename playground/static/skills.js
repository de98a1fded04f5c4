// skills.js: the Skills view. It lists the server's JSON skills, runs one on a pasted
// input (a JSON object) and shows the run's status, output and meta; an array of inputs
// runs as a job, followed through the JavaScript client (EventSource and the job's stream
// token) as a progress bar, then each input's output.

import { $, h, pretty } from './dom.js';
import { words, say } from './i18n.js';

// examples are inputs to start from, one per skill the server ships.
const examples = {
  terminal_state: {
    terminal: '⏺ Which approach do you prefer?\n  A) Enhance the existing React todo app\n  B) Start fresh with a new project\n\n❯ ',
    agent: 'claude_code',
  },
  post_views: [
    { content_text: 'Bitcoin just broke out, adding to my $BTC longs.', platform: 'x', posted_at: '2026-11-30T08:00:00Z',
      assets: [{ symbol: 'BTC', name: 'Bitcoin', market: 'CRYPTO' }] },
    { content_text: 'ETH looks weak here, expecting a drop.', platform: 'x', posted_at: '2026-11-30T09:00:00Z',
      assets: [{ symbol: 'ETH', name: 'Ethereum', market: 'CRYPTO' }] },
  ],
};

export class Skills {
  constructor(api, notify) {
    this.api = api;
    this.notify = notify;
    this.skills = [];
    this.following = null; // the AbortController of the job followed
    this.jobId = null;
  }

  // bind wires the view's controls once.
  bind() {
    $('skill-name').addEventListener('change', () => this.describe(true));
    $('skill-example').addEventListener('click', () => this.describe(true));
    $('skill-form').addEventListener('submit', (e) => {
      e.preventDefault();
      this.run().catch((err) => this.notify(words().runFailed(err.message), true));
    });
    $('job-cancel').addEventListener('click', () => {
      if (this.jobId) this.api.cancelSkillJob(this.jobId).catch((err) => this.notify(err.message, true));
    });
  }

  // show loads the skills (once) when the view opens.
  async show() {
    if (this.skills.length) return;
    this.skills = await this.api.skills();
    $('skill-name').replaceChildren(...this.skills.map((s) => h('option', { value: s.name }, s.name)));
    this.describe(true);
  }

  // describe shows the chosen skill's description and, when asked, its example input.
  describe(withExample) {
    const s = this.skills.find((x) => x.name === $('skill-name').value);
    $('skill-description').textContent = s ? `${s.description} (v${s.version})` : '';
    if (withExample && s) $('skill-input').value = pretty(examples[s.name] ?? {});
  }

  async run() {
    let input;
    try {
      input = JSON.parse($('skill-input').value);
    } catch (e) {
      this.notify(words().notJSON(e.message), true);
      return;
    }
    const name = $('skill-name').value;
    const locale = $('skill-locale').value;
    this.stopJob();
    $('skill-run').disabled = true;
    try {
      if (Array.isArray(input)) await this.startJob(name, input, locale);
      else this.showRun(await this.api.runSkill(name, input, locale, $('skill-source').value.trim()));
    } finally {
      $('skill-run').disabled = false;
    }
  }

  showRun(run) {
    $('job-result').hidden = true;
    $('skill-result').hidden = false;
    const w = words();
    const status = $('skill-status');
    status.textContent = say(w, 'value', run.status);
    status.title = run.status;
    status.className = `chip ${run.status}`;
    const parts = [w.modelCalls(run.meta.attempts), w.decidedBy(say(w, 'decider', run.meta.decided_by)), say(w, 'outputMode', run.meta.output_mode_used)];
    if (run.duplicate) parts.push(w.duplicate);
    if (run.error) parts.push(run.error.message);
    $('skill-summary').textContent = parts.filter(Boolean).join(' · ');
    $('skill-summary').title = run.error?.code ?? '';
    $('skill-output').textContent = pretty(run.output);
    $('skill-meta').textContent = pretty(run.meta);
  }

  async startJob(name, inputs, locale) {
    const job = await this.api.postSkillJob(name, inputs, locale);
    this.jobId = job.job_id;
    $('skill-result').hidden = true;
    $('job-result').hidden = false;
    $('job-cancel').hidden = false;
    $('job-runs').replaceChildren();
    this.progress({ done: 0, total: job.total, succeeded: 0, failed: 0 }, job.status);
    this.followJob(job).catch((err) => this.notify(err.message, true));
  }

  // followJob shows the job's progress as the client follows it (by its stream token), then
  // each input's run.
  async followJob(job) {
    const stop = new AbortController();
    this.following = stop;
    const watch = this.api.client.skills.followJob(job.job_id, { streamToken: job.stream_token, signal: stop.signal });
    try {
      for await (const ev of watch) this.progress(ev.data, ev.event === 'progress' ? 'running' : ev.event);
    } catch (err) {
      if (stop.signal.aborted) return;
      throw err;
    }
    this.stopJob();
    await this.listRuns(job.job_id);
  }

  progress(p, status) {
    const el = $('job-status');
    el.textContent = say(words(), 'value', status);
    el.title = status;
    el.className = `chip ${status}`;
    $('job-progress').max = p.total;
    $('job-progress').value = p.done;
    $('job-count').textContent = words().jobCount(p);
  }

  // listRuns shows each input's run once the job has ended: its status, and its output
  // (or what went wrong).
  async listRuns(id) {
    const job = await this.api.skillJob(id);
    const w = words();
    const items = await Promise.all(job.runs.map(async (runId, i) => {
      if (!runId) return h('li', { class: 'muted' }, w.notRun(i));
      const run = await this.api.skillRun(runId);
      return h('li', { dataset: { status: run.status } },
        h('span', { class: 'run-head' }, `${w.input(i)}: `, h('span', { class: `chip ${run.status}`, title: run.status }, say(w, 'value', run.status))),
        run.error ? h('p', { class: 'error', title: run.error.code }, run.error.message) : null,
        run.output != null ? h('pre', {}, pretty(run.output)) : null);
    }));
    $('job-runs').replaceChildren(...items);
  }

  stopJob() {
    this.following?.abort();
    this.following = null;
    $('job-cancel').hidden = true;
  }
}
