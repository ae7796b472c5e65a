import { describe, expect, it } from 'vitest';

import { type GpuFit, renderFit } from '../../src/gpufit';

const GIB = 1024 ** 3;

function fit(overrides: Partial<GpuFit>): GpuFit {
  return {
    uri: 'file:///work/train.py',
    status: 'ok',
    gpu: 'NVIDIA A100 80GB SXM4',
    peak: 38 * GIB,
    interval: [37 * GIB, 40 * GIB],
    percent: 48,
    verdict: 'fits',
    reason: '',
    ...overrides,
  };
}

describe('a fit measured with the user\'s model (torchward.measure)', () => {
  it('switches the status bar from estimated to measured', () => {
    expect(renderFit(fit({ measured: false })).text).toBe('✓ A100 80GB SXM4 · 48%');
    expect(renderFit(fit({ measured: true })).text).toBe('✓ A100 80GB SXM4 · 48% · measured');
    expect(renderFit(fit({ measured: true, verdict: 'oom', percent: 130 })).text).toBe('✗ A100 80GB SXM4 · OOM 130% · measured');
  });

  it('says so in the tooltip', () => {
    expect(renderFit(fit({ measured: true })).tooltip).toContain('(measured with your model)');
    expect(renderFit(fit({})).tooltip).not.toContain('measured');
  });
});
