// GET /jobs/{id}/dashboard: the job's own page when no tracker is configured (its tracker_url). Server-
// rendered HTML: status, the loss curve as inline SVG from the stored progress, the pre-flight report, metrics and
// hyperparameters;
// it reloads itself every few seconds while the job runs. No script, no external asset.
import { RUNNING_STATUSES, type JobEventRow, type TrainingJobRow } from '@ftp/platform';
import type { PreflightReport } from '@ftp/schema';
import { appliedTrainingConfig } from '@ftp/jobs';

const escape = (value: unknown): string =>
  String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const W = 640;
const H = 260;
const PAD = 40;

export function lossCurveSvg(points: Array<{ step: number; loss: number }>): string {
  if (points.length === 0) return '<p class="empty">No loss reported yet.</p>';
  const steps = points.map((p) => p.step);
  const losses = points.map((p) => p.loss);
  const [minStep, maxStep] = [Math.min(...steps), Math.max(...steps)];
  const [minLoss, maxLoss] = [Math.min(...losses), Math.max(...losses)];
  const x = (step: number) => PAD + ((step - minStep) / (maxStep - minStep || 1)) * (W - 2 * PAD);
  const y = (loss: number) => H - PAD - ((loss - minLoss) / (maxLoss - minLoss || 1)) * (H - 2 * PAD);
  const path = points.map((p, i) => `${i === 0 ? 'M' : 'L'}${x(p.step).toFixed(1)},${y(p.loss).toFixed(1)}`).join(' ');
  const dots = points.map((p) => `<circle cx="${x(p.step).toFixed(1)}" cy="${y(p.loss).toFixed(1)}" r="3"><title>step ${p.step}: ${p.loss.toFixed(4)}</title></circle>`).join('');
  return `<svg id="loss-curve" role="img" aria-label="training loss by step" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">
  <line x1="${PAD}" y1="${H - PAD}" x2="${W - PAD}" y2="${H - PAD}" class="axis"/><line x1="${PAD}" y1="${PAD}" x2="${PAD}" y2="${H - PAD}" class="axis"/>
  <text x="${PAD}" y="${H - 12}">step ${minStep}</text><text x="${W - PAD}" y="${H - 12}" text-anchor="end">step ${maxStep}</text>
  <text x="6" y="${PAD}">${maxLoss.toFixed(3)}</text><text x="6" y="${H - PAD}">${minLoss.toFixed(3)}</text>
  <path d="${path}" class="curve"/>${dots}
</svg>`;
}

function table(rows: Array<[string, unknown]>): string {
  return `<table>${rows.map(([k, v]) => `<tr><th>${escape(k)}</th><td>${escape(typeof v === 'object' && v !== null ? JSON.stringify(v) : v ?? '—')}</td></tr>`).join('')}</table>`;
}

const GIB = 1024 ** 3;

/** The pre-flight report: the numbers, the warnings with their fixes, and the first examples with the trained spans
 *  marked (<mark>). */
export function preflightSection(report: PreflightReport | null): string {
  if (!report) return '<p class="empty">No pre-flight report yet (the worker makes it before training).</p>';
  const { tokens, truncated, steps, memory } = report;
  const rows: Array<[string, unknown]> = [
    ['examples', `${report.examples.train} train${report.examples.test === null || report.examples.test === undefined ? '' : `, ${report.examples.test} test`}`],
    ['tokens per example', `min ${tokens.min} · median ${tokens.median} · p95 ${tokens.p95} · max ${tokens.max}`],
    ['truncated at max_length ' + report.max_length, `${truncated.examples} examples, ${truncated.loss_tokens_lost} trained tokens lost`],
    ['tokens carrying loss', report.loss_token_share === null || report.loss_token_share === undefined ? '—' : `${(report.loss_token_share * 100).toFixed(1)}%`],
    ['steps', `${steps.per_epoch} per epoch, ${steps.total} in total (effective batch ${steps.effective_batch_size})`],
    ['training tokens', report.training_tokens],
    ['trainable parameters', `${report.model.trainable_parameters} of ${report.model.parameters} (${report.model.dtype})`],
    ['estimated peak memory', `${(memory.estimated_peak_bytes / GIB).toFixed(2)} GiB`],
    ...report.estimates.map((e): [string, unknown] => [
      `on ${e.host} (${e.device})`,
      `${e.wall_seconds === null || e.wall_seconds === undefined ? 'speed not measured yet' : `~${Math.ceil(e.wall_seconds)} s at ${Math.round(e.tokens_per_second ?? 0)} tokens/s`}; ${e.fits ? 'fits' : 'does not fit'} in ${(e.memory_bytes / GIB).toFixed(1)} GiB`,
    ]),
  ];
  const warnings = report.warnings.length === 0 ? '' : `<ul class="warnings">${report.warnings.map((w) => `<li><b>${escape(w.code)}</b>: ${escape(w.message)}</li>`).join('')}</ul>`;
  const samples = report.samples
    .map((sample) => `<pre class="sample">${sample.segments.map((seg) => (seg.trained ? `<mark>${escape(seg.text)}</mark>` : escape(seg.text))).join('')}</pre>`)
    .join('');
  return `${warnings}${table(rows)}<p>The first examples as training sees them; <mark>marked</mark> text carries the loss:</p>${samples}`;
}

export function renderDashboard(job: TrainingJobRow, events: JobEventRow[]): string {
  const running = RUNNING_STATUSES.includes(job.status);
  const points = events
    .filter((e) => e.kind === 'progress' && typeof e.data.loss === 'number')
    .map((e) => ({ step: Number(e.data.step), loss: Number(e.data.loss) }));
  const config = appliedTrainingConfig(job.training_config, job.preflight as PreflightReport | null) as { method?: string; trainer_type?: string; hyperparameters?: Record<string, unknown> };
  const progress = job.progress;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(job.job_name)} · ${escape(job.status)}</title>
${running ? '<meta http-equiv="refresh" content="3">' : ''}
<style>
 body{font:14px/1.4 system-ui,sans-serif;margin:2rem;color:#1d2330;max-width:60rem}
 h1{font-size:1.4rem;margin:0 0 .2rem} .status{display:inline-block;padding:.1rem .6rem;border-radius:1rem;background:#e8eaf0}
 .status.completed{background:#d3f4dc}.status.failed{background:#fbd9d9}.status.training{background:#dbe8ff}
 table{border-collapse:collapse;margin:.5rem 0 1.5rem}th,td{text-align:left;padding:.2rem .8rem;border-bottom:1px solid #eee}
 th{font-weight:600;color:#555} .axis{stroke:#888} .curve{fill:none;stroke:#2f6fde;stroke-width:2} circle{fill:#2f6fde}
 svg text{font-size:11px;fill:#555} .error{color:#a00}
 pre.sample{white-space:pre-wrap;background:#f6f7f9;padding:.5rem;border-radius:4px} mark{background:#ffe9a8}
 .warnings li{color:#8a4b00}
</style></head>
<body>
<h1>${escape(job.job_name)}</h1>
<p>job <code>${escape(job.job_id)}</code> · <span class="status ${escape(job.status)}" id="status">${escape(job.status)}</span>
 · ${escape(config.trainer_type ?? '')} ${escape(config.method ?? '')} on <code>${escape(job.base_model_id)}</code></p>
${job.error ? `<p class="error" id="error">${escape(job.error)}</p>` : ''}
<h2>Loss</h2>
${lossCurveSvg(points)}
<h2>Pre-flight</h2>
<section id="preflight">${preflightSection(job.preflight as PreflightReport | null)}</section>
<h2>Progress</h2>
${table([['step', progress ? `${progress.step} / ${progress.total_steps ?? '?'}` : null], ['epoch', progress?.epoch], ['loss', progress?.loss], ['eta (s)', progress?.eta_seconds], ['tokens/s', progress?.tokens_per_second]])}
<h2>Metrics</h2>
${table(Object.entries(job.metrics ?? {}))}
<h2>Hyperparameters</h2>
${table(Object.entries(config.hyperparameters ?? {}))}
</body></html>`;
}
