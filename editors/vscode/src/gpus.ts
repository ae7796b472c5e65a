/** The GPU quick pick's items, from `torchward gpus --instances --format json`. */

export interface GpuCatalog {
  gpus?: Array<{ key: string; name: string; memory_bytes?: number; tier?: string }>;
  instances?: Array<{ name: string; provider?: string; gpu: string; count?: number }>;
}

export interface GpuItem {
  label: string;
  description?: string;
  /** What `torchward.selectGpu` receives; undefined for separators. */
  value?: string;
  kind?: 'separator';
}

export function gpuItems(catalog: GpuCatalog, current?: string | null): GpuItem[] {
  const items: GpuItem[] = [{ label: 'GPUs', kind: 'separator' }];
  const names = new Map<string, string>();
  for (const gpu of catalog.gpus ?? []) {
    names.set(gpu.key, gpu.name);
    const memory = gpu.memory_bytes ? `${Math.round(gpu.memory_bytes / 1024 ** 3)} GB` : '';
    const marker = current && (current === gpu.name || current === gpu.key) ? ' (current)' : '';
    items.push({ label: gpu.name, description: [gpu.key, memory, gpu.tier].filter(Boolean).join(' · ') + marker, value: gpu.key });
  }
  if (catalog.instances?.length) {
    items.push({ label: 'Cloud instances', kind: 'separator' });
    for (const instance of catalog.instances) {
      const gpu = names.get(instance.gpu) ?? instance.gpu;
      const marker = current === instance.name ? ' (current)' : '';
      items.push({
        label: instance.name,
        description: `${instance.provider ?? ''} · ${instance.count ?? 1}× ${gpu}${marker}`,
        value: instance.name,
      });
    }
  }
  return items;
}
