// GET /jobs/{id}/dashboard: the job's own page when no tracker is configured (its tracker_url). Server-
// rendered HTML: status, the loss curve (GRPO: the reward) with its evaluations as inline SVG from the stored events,
// the pre-flight report, metrics and hyperparameters, figures as the console writes them (readable.ts); it reloads
// itself every few seconds while the job runs. No script, no external asset (the icon is inline).
import { RUNNING_STATUSES, type JobEventRow, type Platform, type TrainingJobRow } from '@ftp/platform';
import { jobConfig, type PreflightReport } from '@ftp/schema';
import { appliedTrainingConfig, estimatedTime, formatBytes, formatTicks, niceTicks, readableNumber } from '@ftp/jobs/training';

const escape = (value: unknown): string =>
  String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const W = 640;
const H = 260;
const LEFT = 56;
const PAD = 28;

export interface CurvePoint {
  step: number;
  value: number;
}

/** The training curve (GRPO: the reward) by step with its evaluations as dots, on axes ticked at round numbers. */
export function curveSvg(figure: 'loss' | 'reward', train: CurvePoint[], evals: CurvePoint[]): string {
  if (train.length === 0 && evals.length === 0) return `<p class="empty">No ${figure} reported yet.</p>`;
  const all = [...train, ...evals];
  const xTicks = niceTicks(Math.min(...all.map((p) => p.step)), Math.max(...all.map((p) => p.step)), 6, true);
  const yTicks = niceTicks(Math.min(...all.map((p) => p.value)), Math.max(...all.map((p) => p.value)), 5);
  const [x0, x1, y0, y1] = [xTicks[0]!, xTicks.at(-1)!, yTicks[0]!, yTicks.at(-1)!];
  const x = (step: number) => LEFT + ((step - x0) / (x1 - x0 || 1)) * (W - LEFT - PAD);
  const y = (value: number) => H - PAD - ((value - y0) / (y1 - y0 || 1)) * (H - 2 * PAD);
  const at = (p: CurvePoint) => `cx="${x(p.step).toFixed(1)}" cy="${y(p.value).toFixed(1)}"`;
  const path = train.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.step).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ');
  const dots = train.map((p) => `<circle class="train" ${at(p)} r="3"><title>step ${p.step}: ${p.value.toFixed(4)}</title></circle>`).join('');
  const evalDots = evals.map((p) => `<circle class="eval" ${at(p)} r="5"><title>eval at step ${p.step}: ${p.value.toFixed(4)}</title></circle>`).join('');
  const xLabels = formatTicks(xTicks);
  const yLabels = formatTicks(yTicks);
  const grid = [
    ...yTicks.map((v, i) => `<line x1="${LEFT}" y1="${y(v).toFixed(1)}" x2="${W - PAD}" y2="${y(v).toFixed(1)}" class="grid"/><text class="y-tick" x="${LEFT - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${yLabels[i]}</text>`),
    ...xTicks.map((v, i) => `<line x1="${x(v).toFixed(1)}" y1="${H - PAD}" x2="${x(v).toFixed(1)}" y2="${H - PAD + 4}" class="axis"/><text class="x-tick" x="${x(v).toFixed(1)}" y="${H - PAD + 16}" text-anchor="middle">${xLabels[i]}</text>`),
  ].join('');
  const legend = `<text x="${LEFT}" y="14" class="legend">— train ${figure}${evals.length ? ` · <tspan class="eval">●</tspan> eval ${figure}` : ''} · by step</text>`;
  return `<svg id="loss-curve" role="img" aria-label="${figure} by step" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">
  ${grid}<line x1="${LEFT}" y1="${H - PAD}" x2="${W - PAD}" y2="${H - PAD}" class="axis"/><line x1="${LEFT}" y1="${PAD}" x2="${LEFT}" y2="${H - PAD}" class="axis"/>
  ${legend}<path d="${path}" class="curve"/>${dots}${evalDots}
</svg>`;
}

/** A value as a person reads it: figures rounded with thousands separators, objects as JSON, nothing as a dash. */
function shown(value: unknown): string {
  if (typeof value === 'number') return readableNumber(value);
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value ?? '—');
}

function table(rows: Array<[string, unknown]>): string {
  return `<table>${rows.map(([k, v]) => `<tr><th>${escape(k)}</th><td>${escape(shown(v))}</td></tr>`).join('')}</table>`;
}

const count = (n: number) => n.toLocaleString('en');

/** The pre-flight report: the numbers, the warnings with their fixes, and the first examples with the trained spans
 *  marked (<mark>). */
export function preflightSection(report: PreflightReport | null): string {
  if (!report) return '<p class="empty">No pre-flight report yet (the worker makes it before training).</p>';
  const { tokens, truncated, steps, memory } = report;
  const rows: Array<[string, unknown]> = [
    ['examples', `${count(report.examples.train)} train${report.examples.test === null || report.examples.test === undefined ? '' : `, ${count(report.examples.test)} test`}`],
    ['tokens per example', `min ${count(tokens.min)} · median ${readableNumber(tokens.median)} · p95 ${readableNumber(tokens.p95)} · max ${count(tokens.max)}`],
    ['truncated at max_length ' + count(report.max_length), `${count(truncated.examples)} examples, ${count(truncated.loss_tokens_lost)} trained tokens lost`],
    ['tokens carrying loss', report.loss_token_share === null || report.loss_token_share === undefined ? '—' : `${(report.loss_token_share * 100).toFixed(1)}%`],
    ['steps', `${count(steps.per_epoch)} per epoch, ${count(steps.total)} in total (effective batch ${count(steps.effective_batch_size)})`],
    ['training tokens', report.training_tokens],
    ['trainable parameters', `${count(report.model.trainable_parameters)} of ${count(report.model.parameters)} (${report.model.dtype})`],
    ['estimated peak memory', formatBytes(memory.estimated_peak_bytes)],
    ...report.estimates.map((e): [string, unknown] => [
      `on ${e.host} (${e.device})`,
      `${estimatedTime(e)}; ${e.fits ? 'fits' : 'does not fit'} in ${formatBytes(e.memory_bytes)}`,
    ]),
  ];
  const warnings = report.warnings.length === 0 ? '' : `<ul class="warnings">${report.warnings.map((w) => `<li><b>${escape(w.code)}</b>: ${escape(w.message)}</li>`).join('')}</ul>`;
  const samples = report.samples
    .map((sample) => `<pre class="sample">${sample.segments.map((seg) => (seg.trained ? `<mark>${escape(seg.text)}</mark>` : escape(seg.text))).join('')}</pre>`)
    .join('');
  return `${warnings}${table(rows)}<p>The first examples as training sees them; <mark>marked</mark> text carries the loss:</p>${samples}`;
}

/** The page's icon, inline, so a browser asks the service for no /favicon.ico (a 404 in its console, #39). */
const ICON = `data:image/svg+xml,${encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#2f6fde"/><path d="M3 12 L7 7 L10 9 L13 4" stroke="#fff" stroke-width="1.6" fill="none"/></svg>')}`;

const figureOf = (data: Record<string, unknown>, key: string): number | undefined => {
  const value = data[key] ?? (data.extra as Record<string, unknown> | undefined)?.[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
};

/** The curve's points from the job's events: training's by step, and its evaluations' (the evaluation after training
 *  only when it made none during it, as the console draws them). A GRPO job's figure is its reward: its loss is ~0
 *  by construction. */
export function curvePoints(events: JobEventRow[], grpo: boolean): { train: CurvePoint[]; evals: CurvePoint[] } {
  const pick = (rows: JobEventRow[], key: string) => rows.flatMap((e) => {
    const value = figureOf(e.data, key);
    return value === undefined ? [] : [{ step: Number(e.data.step), value }];
  });
  const train = pick(events.filter((e) => e.kind === 'progress'), grpo ? 'reward' : 'loss');
  const metrics = events.filter((e) => e.kind === 'metrics');
  const during = metrics.filter((e) => !e.data.final);
  const evals = grpo ? pick(during, 'eval_reward') : pick(during.length > 0 ? during : metrics, 'eval_loss');
  return { train, evals };
}

export function renderDashboard(job: TrainingJobRow, events: JobEventRow[]): string {
  const running = RUNNING_STATUSES.includes(job.status);
  const config = appliedTrainingConfig(jobConfig(job), job.preflight as PreflightReport | null);
  const grpo = config.trainer_type === 'grpo';
  const { train, evals } = curvePoints(events, grpo);
  const progress = job.progress;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(job.job_name)} · ${escape(job.status)}</title>
<link rel="icon" href="${ICON}">
${running ? '<meta http-equiv="refresh" content="3">' : ''}
<style>
 body{font:14px/1.4 system-ui,sans-serif;margin:2rem;color:#1d2330;max-width:60rem}
 h1{font-size:1.4rem;margin:0 0 .2rem} .status{display:inline-block;padding:.1rem .6rem;border-radius:1rem;background:#e8eaf0}
 .status.completed{background:#d3f4dc}.status.failed{background:#fbd9d9}.status.training{background:#dbe8ff}
 table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{text-align:left;padding:.2rem .8rem;border-bottom:1px solid #eee}
 th{font-weight:600;color:#555} .axis{stroke:#888} .grid{stroke:#eee} .curve{fill:none;stroke:#2f6fde;stroke-width:2}
 circle.train{fill:#2f6fde} circle.eval{fill:#e8590c} tspan.eval{fill:#e8590c} svg text{font-size:11px;fill:#555} .error{color:#a00}
 pre.sample{white-space:pre-wrap;background:#f6f7f9;padding:.5rem;border-radius:4px} mark{background:#ffe9a8}
 .warnings li{color:#8a4b00}
</style></head>
<body>
<h1>${escape(job.job_name)}</h1>
<p>job <code>${escape(job.job_id)}</code> · <span class="status ${escape(job.status)}" id="status">${escape(job.status)}</span>
 · ${escape(config.trainer_type)} ${escape(config.method)} on <code>${escape(job.base_model_id)}</code></p>
${job.error ? `<p class="error" id="error">${escape(job.error)}</p>` : ''}
<h2>${grpo ? 'Reward' : 'Loss'}</h2>
${curveSvg(grpo ? 'reward' : 'loss', train, evals)}
<h2>Pre-flight</h2>
<section id="preflight">${preflightSection(job.preflight as PreflightReport | null)}</section>
<h2>Progress</h2>
${table([['step', progress ? `${count(progress.step)} / ${progress.total_steps === null ? '?' : count(progress.total_steps)}` : null], ['epoch', progress?.epoch], grpo ? ['reward', progress?.reward] : ['loss', progress?.loss], ['eta (s)', progress?.eta_seconds], ['tokens/s', progress?.tokens_per_second]])}
<h2>Metrics</h2>
${table(Object.entries(job.metrics ?? {}))}
<h2>Hyperparameters</h2>
${table(Object.entries(config.hyperparameters))}
</body></html>`;
}

/** The dashboard's answer to a browser without an API key (token and jwt modes): a browser cannot send one with a
 *  link, so the page names the console's page of the job, which signs in with the key. */
export function signInPage(platform: Platform, jobId: string): string {
  const consolePage = `http://${platform.config.HOST}:${platform.config.CONSOLE_PORT}/training/${encodeURIComponent(jobId)}`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>Sign in to see this job</title></head><body>
<h1>This job's page needs your API key</h1>
<p>A browser sends no key with a link. Open the job in the web console, which signs in with your key:
<a href="${escape(consolePage)}">${escape(consolePage)}</a>.</p>
<p>Or save this page with the key: <code>curl -H 'Authorization: Bearer &lt;your key&gt;' ${escape(`http://${platform.config.HOST}:${platform.config.TRAINING_PORT}/jobs/${encodeURIComponent(jobId)}/dashboard`)} &gt; job.html</code></p>
</body></html>`;
}
