import { describe, expect, it } from 'vitest';

import { gpuItems } from '../../src/gpus';
import { bar, reportMarkdown } from '../../src/report';

const GIB = 1024 ** 3;

describe('estimate report', () => {
  it('shows the verdict, a breakdown bar chart largest first, the remedies and where inputs came from', () => {
    const markdown = reportMarkdown(
      'train.py',
      {
        model: 'llama-2-7b',
        mode: 'train',
        gpu: 'NVIDIA A100 80GB SXM4',
        usable_bytes: 80 * GIB,
        peak_bytes: 200 * GIB,
        low_bytes: 150 * GIB,
        high_bytes: 300 * GIB,
        verdict: 'oom',
        confidence: 'low',
        terms: { weights: 25 * GIB, activations: 150 * GIB, optimizer_state: 25 * GIB, kv_cache: 0 },
        remedies: [{ title: 'gradient checkpointing', saving_bytes: 100 * GIB, peak_bytes: 100 * GIB, verdict: 'oom', cost: 'speed' }],
        config: { batch_size: { value: 8, source: 'assumed' } },
      },
      undefined,
    );
    expect(markdown).toContain('✗ **Does not fit** — 250% of 80.0 GiB usable');
    expect(markdown.indexOf('| activations |')).toBeLessThan(markdown.indexOf('| weights |'));
    expect(markdown).not.toContain('kv cache');
    expect(markdown).toContain('| gradient checkpointing | 100 GiB | 100 GiB | oom | speed |');
    expect(markdown).toContain('| batch size | 8 | assumed |');
  });

  it("falls back to the server's answer and the CLI's complaint when there is no estimate", () => {
    const markdown = reportMarkdown('t.py', undefined, { uri: 'file:///t.py', status: 'none', reason: 'no training run found' }, 'no model');
    expect(markdown).toContain('could not read this script: no model');
    expect(markdown).toContain('status `none` — no training run found');
  });

  it('draws bars in proportion, at least one cell for anything present', () => {
    expect(bar(50, 100, 10)).toBe('█████');
    expect(bar(1, 1000, 10)).toBe('█');
    expect(bar(0, 100, 10)).toBe('');
  });
});

describe('GPU quick pick', () => {
  it('lists GPUs then cloud instances with their GPU, marking the current choice', () => {
    const items = gpuItems(
      {
        gpus: [{ key: 'a100-80gb', name: 'NVIDIA A100 80GB SXM4', memory_bytes: 80 * GIB, tier: 'datacenter' }],
        instances: [{ name: 'p4de.24xlarge', provider: 'aws', gpu: 'a100-80gb', count: 8 }],
      },
      'NVIDIA A100 80GB SXM4',
    );
    expect(items).toEqual([
      { label: 'GPUs', kind: 'separator' },
      { label: 'NVIDIA A100 80GB SXM4', description: 'a100-80gb · 80 GB · datacenter (current)', value: 'a100-80gb' },
      { label: 'Cloud instances', kind: 'separator' },
      { label: 'p4de.24xlarge', description: 'aws · 8× NVIDIA A100 80GB SXM4', value: 'p4de.24xlarge' },
    ]);
  });
});
