/**
 * The estimate report (command "torchward: Show Estimate Report"): a Markdown document
 * built from `torchward estimate SCRIPT --format json` (docs/estimate-json.md) — the
 * breakdown as a bar chart, the remedies, and where every input came from — or, when
 * the CLI has nothing to say, from the server's `torchward/estimate` answer.
 */
import { type GpuFit, formatBytes, isOom } from './gpufit';

export interface EstimateJson {
  model?: string;
  params?: number;
  mode?: string;
  gpu?: string | null;
  usable_bytes?: number | null;
  peak_bytes?: number;
  low_bytes?: number;
  high_bytes?: number;
  verdict?: string | null;
  confidence?: string;
  peak_phase?: string;
  terms?: Record<string, number>;
  config?: Record<string, { value: unknown; source: string; confidence?: string }>;
  remedies?: Array<{ title: string; saving_bytes: number; peak_bytes: number; verdict?: string | null; cost?: string }>;
  missing?: string[];
  notes?: string[];
  max_batch_size?: number | null;
  smallest_gpu?: string | null;
  smallest_instance?: string | null;
}

const BAR_WIDTH = 30;

export function bar(value: number, total: number, width = BAR_WIDTH): string {
  if (!(total > 0) || !(value > 0)) {
    return '';
  }
  const cells = Math.max(1, Math.round((value / total) * width));
  return '█'.repeat(Math.min(cells, width));
}

function verdictLine(verdict: string | null | undefined, peak: number | undefined, usable: number | null | undefined): string {
  const share = peak !== undefined && usable ? ` — ${Math.round((100 * peak) / usable)}% of ${formatBytes(usable)} usable` : '';
  if (isOom(verdict)) {
    return `✗ **Does not fit**${share}`;
  }
  if (verdict === 'tight') {
    return `~ **Tight**: the high end of the interval does not fit${share}`;
  }
  if (verdict === 'fits') {
    return `✓ **Fits**${share}`;
  }
  return 'No GPU chosen: run "torchward: Select GPU" for a verdict';
}

export function reportMarkdown(file: string, estimate: EstimateJson | undefined, fit: GpuFit | undefined, problem?: string): string {
  const lines = [`# torchward estimate — ${file}`, ''];
  if (!estimate) {
    lines.push(problem ? `The estimator could not read this script: ${problem}` : 'No estimate for this script.', '');
    if (fit) {
      lines.push(`Server: status \`${fit.status}\`${fit.reason ? ` — ${fit.reason}` : ''}.`);
    }
    return lines.join('\n') + '\n';
  }
  const peak = estimate.peak_bytes;
  lines.push(
    `**${estimate.model ?? 'model'}** · ${estimate.mode ?? ''} · GPU: **${estimate.gpu ?? 'none'}**`,
    '',
    verdictLine(estimate.verdict, peak, estimate.usable_bytes),
    '',
    `Peak **${formatBytes(peak)}** (interval ${formatBytes(estimate.low_bytes)} – ${formatBytes(estimate.high_bytes)}, confidence ${estimate.confidence ?? '?'}` +
      `${estimate.peak_phase ? `, at ${estimate.peak_phase}` : ''}).`,
    '',
  );
  const terms = Object.entries(estimate.terms ?? {}).filter(([, bytes]) => bytes > 0);
  if (terms.length) {
    lines.push('## Breakdown', '', '| term | size | |', '|---|---:|---|');
    for (const [name, bytes] of terms.sort((a, b) => b[1] - a[1])) {
      lines.push(`| ${name.replace(/_/g, ' ')} | ${formatBytes(bytes)} | \`${bar(bytes, peak ?? 0)}\` |`);
    }
    lines.push('');
  }
  const remedies = estimate.remedies ?? [];
  if (remedies.length) {
    lines.push('## Remedies', '', '| change | saves | peak after | verdict | cost |', '|---|---:|---:|---|---|');
    for (const remedy of remedies) {
      lines.push(
        `| ${remedy.title} | ${formatBytes(remedy.saving_bytes)} | ${formatBytes(remedy.peak_bytes)} | ${remedy.verdict ?? ''} | ${remedy.cost ?? ''} |`,
      );
    }
    lines.push('');
  }
  const hints = [
    estimate.max_batch_size !== undefined && estimate.max_batch_size !== null ? `largest batch size that fits: ${estimate.max_batch_size}` : '',
    estimate.smallest_gpu ? `smallest GPU that fits as is: ${estimate.smallest_gpu}` : '',
    estimate.smallest_instance ? `smallest instance that fits as is: ${estimate.smallest_instance}` : '',
  ].filter(Boolean);
  if (hints.length) {
    lines.push(...hints.map((hint) => `- ${hint}`), '');
  }
  const config = Object.entries(estimate.config ?? {});
  if (config.length) {
    lines.push('## Inputs', '', '| input | value | from |', '|---|---|---|');
    for (const [name, field] of config) {
      lines.push(`| ${name.replace(/_/g, ' ')} | ${String(field.value)} | ${field.source} |`);
    }
    lines.push('');
  }
  for (const note of estimate.notes ?? []) {
    lines.push(`> ${note}`, '');
  }
  return lines.join('\n');
}
