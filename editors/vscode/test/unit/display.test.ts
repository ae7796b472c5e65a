/**
 * The status bar shows the server's formatted strings (server/units.py) as they are, so
 * it agrees with the lens and hover; a low-confidence OOM reads as TW010 does (silent:
 * "may not fit"), never "OOM".
 */
import { beforeEach, describe, expect, it } from 'vitest';

import { type GpuFit, renderFit, UNCERTAIN_TEXT } from '../../src/gpufit';
import { GpuFitStatus, notebookOf } from '../../src/statusbar';
import { mock } from '../vscode-mock';

const GIB = 1024 ** 3;

function fit(overrides: Partial<GpuFit>): GpuFit {
  return {
    uri: 'file:///work/train.py',
    status: 'ok',
    gpu: 'NVIDIA A100 40GB SXM4',
    peak: 0.2384 * GIB,
    interval: [0.2 * GIB, 0.3 * GIB],
    percent: 3256.5,
    verdict: 'oom',
    display: {
      hardware: '8× A100 40GB SXM4 (p4d.24xlarge) · 1 of 8 used',
      peak: '244 MiB',
      percent: '3257%',
      interval: ['205 MiB', '307 MiB'],
      verdict: 'does not fit',
    },
    ...overrides,
  };
}

describe('the server formats, the status bar shows', () => {
  it('keeps the instance and the share as the server wrote them', () => {
    const view = renderFit(fit({}));
    expect(view.text).toBe('✗ 8× A100 40GB SXM4 (p4d.24xlarge) · 1 of 8 used · OOM 3257%');
    expect(view.tooltip).toContain('| peak | 244 MiB (3257% of usable memory) |');
    expect(view.tooltip).toContain('205 MiB – 307 MiB');
    expect(view.tooltip).toContain('does not fit');
  });

  it('says "may not fit (low confidence)" where TW010 is silent, never OOM', () => {
    const view = renderFit(fit({ lowConfidence: true, display: { ...fit({}).display!, verdict: UNCERTAIN_TEXT } }));
    expect(view.text).not.toContain('OOM');
    expect(view.text).toContain(UNCERTAIN_TEXT);
    expect(view.tone).toBe('warning');
  });

  it('rounds half up without the server strings too, as the server does', () => {
    expect(renderFit(fit({ display: null })).text).toBe('✗ A100 40GB SXM4 · OOM 3257%');
  });
});

describe('a notebook has one fit, shown on every cell', () => {
  beforeEach(() => mock.reset());

  it('maps a cell to its notebook', () => {
    expect(notebookOf('vscode-notebook-cell:/work/explore.ipynb#W2sZmlsZQ%3D%3D')).toBe('file:///work/explore.ipynb');
    expect(notebookOf('file:///work/train.py')).toBeUndefined();
  });

  it("shows the notebook's fit while a cell is the active editor", () => {
    const status = new GpuFitStatus();
    const item = mock.statusBarItems[0];
    mock.setActiveDocument('vscode-notebook-cell:/work/explore.ipynb#W2sZmlsZQ%3D%3D');
    status.update(fit({ uri: 'file:///work/explore.ipynb' }));
    expect(item.visible).toBe(true);
    expect(item.text).toContain('OOM 3257%');
    mock.setActiveDocument('vscode-notebook-cell:/work/other.ipynb#W0sZmlsZQ%3D%3D');
    expect(item.visible).toBe(false);
  });
});
