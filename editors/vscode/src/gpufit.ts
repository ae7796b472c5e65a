/**
 * The `torchward/gpuFit` notification and how it reads in the status bar.
 *
 * Wire shape (server/estimates.py): `{uri, status, gpu, peak, interval: [low, high],
 * percent, verdict, reason, hint}`; `status` is `ok` / `none` (not a training script) /
 * `no-job` (a training script whose job cannot be sized: `reason` says why, `hint` what
 * to do) / `unavailable` / `disabled`,
 * byte counts are integers, `percent` is of the GPU's usable memory. The server names a
 * failed fit `does-not-fit`, the CLI `oom`; both read as OOM here — unless `lowConfidence`
 * (TW010 stays silent on that estimate): then "may not fit (low confidence)", as the rule.
 *
 * `display` carries the server's formatted strings (server/units.py: sizes in MiB under
 * 1 GiB, percentages rounded half up, an instance as "8× H100 80GB (p5.48xlarge) · 1 of 8
 * used"); they are shown as they are, so the status bar, lens and hover agree. The local
 * formatting below is only for a server too old to send them.
 */

export interface GpuFit {
  uri: string;
  status: 'ok' | 'none' | 'unavailable' | 'disabled' | string;
  gpu?: string | null;
  peak?: number | null;
  interval?: [number, number] | null;
  percent?: number | null;
  verdict?: string | null;
  reason?: string;
  /** The next step when there is no estimate (status `no-job`). */
  hint?: string;
  /** The numbers come from `torchward profile` / "Measure with your model", not the estimator. */
  measured?: boolean;
  /** An "oom" verdict TW010 does not report (a low-confidence estimate). */
  lowConfidence?: boolean;
  display?: FitDisplay | null;
}

/** The server's formatted strings for a fit (status `ok`). */
export interface FitDisplay {
  hardware: string | null;
  peak: string;
  percent: string;
  interval: [string, string] | null;
  verdict: string | null;
}

export const UNCERTAIN_TEXT = 'may not fit (low confidence)';

export type Tone = 'normal' | 'warning' | 'error';

export interface FitView {
  visible: boolean;
  text: string;
  /** Markdown. */
  tooltip: string;
  tone: Tone;
}

export const GIB = 1024 ** 3;

export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) {
    return '?';
  }
  if (bytes >= GIB) {
    return `${(bytes / GIB).toFixed(bytes >= 100 * GIB ? 0 : 1)} GiB`;
  }
  return `${(bytes / 1024 ** 2).toFixed(0)} MiB`;
}

/** Half up, as server/units.py rounds (used only without the server's `display`). */
function percent(value: number | null | undefined): string {
  return value === null || value === undefined ? '?%' : `${Math.floor(value + 0.5)}%`;
}

/** Short GPU names for the status bar: "NVIDIA A100 80GB SXM4" → "A100 80GB SXM4". */
export function shortGpu(name: string | null | undefined): string {
  if (!name) {
    return 'no GPU';
  }
  return name.replace(/^(NVIDIA|AMD|Tesla)\s+/i, '').replace(/^Tesla\s+/i, '');
}

export function isOom(verdict: string | null | undefined): boolean {
  return verdict === 'oom' || verdict === 'does-not-fit';
}

const CLICK = '\n\n*Click to choose a GPU or cloud instance.* [Show estimate report](command:torchward.showEstimateReport)';

export const NO_JOB_TEXT = '$(question) torchward: no job found — Why?';
/** A Python file with no training run (no PyTorch at all, or a module that trains nothing):
 * a neutral item, never a warning — the tooltip and a click say why and what to do. */
export const NO_TRAINING_TEXT = '$(circle-slash) torchward: no training job';

/** The title of the explanation of a fit without an estimate ("no job found" / "no training job"). */
export function noJobTitle(fit: GpuFit): string {
  return fit.status === 'none' ? 'torchward: no training job' : 'torchward: no job found';
}

/** The "no job found" / "no training job" explanation: why, and the next step (tooltip and the Why? message). */
export function noJobMarkdown(fit: GpuFit): string {
  const next = fit.hint ? `\n\n**Next step:** ${fit.hint}.` : '';
  return `**${noJobTitle(fit)}**\n\n${fit.reason ?? ''}.${next}`;
}

/** Whether a click on the status item explains why there is no estimate (rather than picking a GPU). */
export function explainsWhy(fit: GpuFit | undefined): fit is GpuFit {
  return fit?.status === 'no-job' || fit?.status === 'none';
}

export function renderFit(fit: GpuFit | undefined): FitView {
  if (fit?.status === 'no-job') {
    return { visible: true, text: NO_JOB_TEXT, tooltip: `${noJobMarkdown(fit)}\n\n*Click for the reason and the next step.*`, tone: 'warning' };
  }
  if (fit?.status === 'none') {
    return { visible: true, text: NO_TRAINING_TEXT, tooltip: `${noJobMarkdown(fit)}\n\n*Click for the reason and the next step.*`, tone: 'normal' };
  }
  if (!fit || fit.status === 'disabled') {
    const tooltip = fit?.reason ? `torchward: ${fit.reason}` : 'torchward';
    return { visible: false, text: '', tooltip, tone: 'normal' };
  }
  if (fit.status !== 'ok') {
    return {
      visible: true,
      text: '$(circle-slash) VRAM ?',
      tooltip: `**torchward GPU fit**: no estimate\n\n${fit.reason || fit.status}${CLICK}`,
      tone: 'normal',
    };
  }
  const shown = fit.display;
  const gpu = shown?.hardware ?? shortGpu(fit.gpu);
  const peak = shown?.peak ?? formatBytes(fit.peak);
  const share = shown?.percent ?? percent(fit.percent);
  const interval = shown ? shown.interval : fit.interval ? [formatBytes(fit.interval[0]), formatBytes(fit.interval[1])] : null;
  const measured = fit.measured ? ' · measured' : '';
  const lines = [
    `**torchward GPU fit** — ${shown?.hardware ?? fit.gpu ?? 'no GPU selected'}` +
      (fit.measured ? ' (measured with your model)' : ''),
    '',
    '| | |',
    '|---|---|',
    `| peak | ${peak} (${share} of usable memory) |`,
  ];
  if (interval) {
    lines.push(`| interval | ${interval[0]} – ${interval[1]} |`);
  }
  lines.push(`| verdict | ${shown?.verdict ?? fit.verdict ?? 'unknown'} |`);
  const tooltip = lines.join('\n') + CLICK;
  if (isOom(fit.verdict) && fit.lowConfidence) {
    return { visible: true, text: `~ ${gpu} · ${UNCERTAIN_TEXT}${measured}`, tooltip, tone: 'warning' };
  }
  if (isOom(fit.verdict)) {
    return { visible: true, text: `✗ ${gpu} · OOM ${share}${measured}`, tooltip, tone: 'error' };
  }
  if (fit.verdict === 'tight') {
    return { visible: true, text: `~ ${gpu} · ${share} tight${measured}`, tooltip, tone: 'warning' };
  }
  if (fit.verdict === 'fits') {
    return { visible: true, text: `✓ ${gpu} · ${share}${measured}`, tooltip, tone: 'normal' };
  }
  return { visible: true, text: `? ${gpu} · ${peak}${measured}`, tooltip, tone: 'normal' };
}
