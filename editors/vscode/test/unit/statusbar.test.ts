import { beforeEach, describe, expect, it } from 'vitest';

import { formatBytes, type GpuFit, renderFit, shortGpu } from '../../src/gpufit';
import { GpuFitStatus } from '../../src/statusbar';
import { MarkdownString, mock, ThemeColor } from '../vscode-mock';

const GIB = 1024 ** 3;
const URI = 'file:///work/train.py';

function fit(overrides: Partial<GpuFit>): GpuFit {
  return {
    uri: URI,
    status: 'ok',
    gpu: 'NVIDIA A100 80GB SXM4',
    peak: 38 * GIB,
    interval: [30 * GIB, 45 * GIB],
    percent: 48.2,
    verdict: 'fits',
    reason: '',
    ...overrides,
  };
}

describe('status bar text', () => {
  it('shows a fitting job as a check, the GPU and the share of its memory', () => {
    expect(renderFit(fit({}))).toMatchObject({ visible: true, text: '✓ A100 80GB SXM4 · 48%', tone: 'normal' });
  });

  it('shows a tight job with a tilde and a warning colour', () => {
    expect(renderFit(fit({ verdict: 'tight', percent: 93.4 }))).toMatchObject({ text: '~ A100 80GB SXM4 · 93% tight', tone: 'warning' });
  });

  it("shows an OOM as a cross with the percentage, whether the server says 'does-not-fit' or 'oom'", () => {
    expect(renderFit(fit({ verdict: 'does-not-fit', percent: 256 }))).toMatchObject({ text: '✗ A100 80GB SXM4 · OOM 256%', tone: 'error' });
    expect(renderFit(fit({ verdict: 'oom', percent: 256 })).text).toBe('✗ A100 80GB SXM4 · OOM 256%');
  });

  it('puts the breakdown in the tooltip: GPU, peak, interval, verdict, and how to change the GPU', () => {
    const tooltip = renderFit(fit({})).tooltip;
    expect(tooltip).toContain('NVIDIA A100 80GB SXM4');
    expect(tooltip).toContain('| peak | 38.0 GiB (48% of usable memory) |');
    expect(tooltip).toContain('| interval | 30.0 GiB – 45.0 GiB |');
    expect(tooltip).toContain('| verdict | fits |');
    expect(tooltip).toContain('command:torchward.showEstimateReport');
  });

  it('says there is no estimate, with the reason, when the estimator is unavailable', () => {
    const view = renderFit(fit({ status: 'unavailable', reason: 'the VRAM estimator is not available' }));
    expect(view).toMatchObject({ visible: true, text: '$(circle-slash) VRAM ?' });
    expect(view.tooltip).toContain('the VRAM estimator is not available');
  });

  it('hides itself when the estimator is off or nothing is known', () => {
    expect(renderFit(fit({ status: 'disabled' })).visible).toBe(false);
    expect(renderFit(undefined).visible).toBe(false);
  });

  it('shows the peak when no GPU verdict is known', () => {
    expect(renderFit(fit({ verdict: null, gpu: null, percent: null })).text).toBe('? no GPU · 38.0 GiB');
  });

  it('formats sizes and GPU names compactly', () => {
    expect(formatBytes(512 * 1024 ** 2)).toBe('512 MiB');
    expect(formatBytes(285.3 * GIB)).toBe('285 GiB');
    expect(formatBytes(null)).toBe('?');
    expect(shortGpu('NVIDIA H100 80GB HBM3')).toBe('H100 80GB HBM3');
  });
});

describe('status bar item', () => {
  beforeEach(() => mock.reset());

  it("shows the fit of the active editor's document and opens the GPU picker on click", () => {
    const status = new GpuFitStatus();
    const item = mock.statusBarItems[0];
    mock.setActiveDocument(URI);
    status.update(fit({ verdict: 'does-not-fit', percent: 256 }));
    expect(item.visible).toBe(true);
    expect(item.text).toBe('✗ A100 80GB SXM4 · OOM 256%');
    expect(item.command).toBe('torchward.pickGpu');
    expect(item.backgroundColor).toEqual(new ThemeColor('statusBarItem.errorBackground'));
    expect(item.tooltip).toBeInstanceOf(MarkdownString);
    expect((item.tooltip as MarkdownString).isTrusted).toBe(true);
  });

  it('follows the active editor: hidden for a document with no fit, back when returning', () => {
    const status = new GpuFitStatus();
    const item = mock.statusBarItems[0];
    mock.setActiveDocument(URI);
    status.update(fit({}));
    mock.setActiveDocument('file:///work/other.py');
    expect(item.visible).toBe(false);
    mock.setActiveDocument(URI);
    expect(item.visible).toBe(true);
    expect(item.backgroundColor).toBeUndefined();
  });

  it('does not show a fit that arrives for another document', () => {
    const status = new GpuFitStatus();
    mock.setActiveDocument('file:///work/other.py');
    status.update(fit({}));
    expect(mock.statusBarItems[0].visible).toBe(false);
  });

  it('shows a problem starting the server instead of a fit, and clicking it opens the logs', () => {
    const status = new GpuFitStatus();
    const item = mock.statusBarItems[0];
    status.setProblem('torchward: no way to start the language server.');
    expect(item).toMatchObject({ visible: true, text: '$(error) torchward', command: 'torchward.showLogs' });
    status.setProblem(undefined);
    expect(item.visible).toBe(false);
  });

  it('forgets every fit when the server restarts', () => {
    const status = new GpuFitStatus();
    mock.setActiveDocument(URI);
    status.update(fit({}));
    status.clear();
    expect(mock.statusBarItems[0].visible).toBe(false);
    expect(status.fitFor(URI)).toBeUndefined();
  });
});
