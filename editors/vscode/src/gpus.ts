/** The GPU quick pick's items, from `torchward gpus --instances --format json`. */

export interface GpuCatalog {
  gpus?: Array<{ key: string; name: string; memory_bytes?: number; tier?: string; aliases?: string[] }>;
  instances?: Array<{ name: string; provider?: string; gpu: string; count?: number }>;
}

export interface GpuItem {
  label: string;
  description?: string;
  /** What `torchward.selectGpu` receives; undefined for separators. */
  value?: string;
  kind?: 'separator';
}

/** "NVIDIA A100 80GB SXM4", "a100-80gb", "A100 80GB" → comparable forms. */
function comparable(name: string): string {
  return name.toLowerCase().replace(/^(nvidia|amd|tesla)\s+/, '').replace(/[^a-z0-9]/g, '');
}

/** Whether `current` (the catalog's name from the server, or what a user or pyproject typed) names `gpu`. */
export function namesGpu(current: string | null | undefined, gpu: { key: string; name: string; aliases?: string[] }): boolean {
  if (!current) {
    return false;
  }
  const wanted = comparable(current);
  return [gpu.name, gpu.key, ...(gpu.aliases ?? [])].some((name) => comparable(name) === wanted);
}

export function gpuItems(catalog: GpuCatalog, current?: string | null): GpuItem[] {
  const items: GpuItem[] = [{ label: 'GPUs', kind: 'separator' }];
  const names = new Map<string, string>();
  for (const gpu of catalog.gpus ?? []) {
    names.set(gpu.key, gpu.name);
    const memory = gpu.memory_bytes ? `${Math.round(gpu.memory_bytes / 1024 ** 3)} GB` : '';
    const marker = namesGpu(current, gpu) ? ' (current)' : '';
    items.push({ label: gpu.name, description: [gpu.key, memory, gpu.tier].filter(Boolean).join(' · ') + marker, value: gpu.key });
  }
  if (catalog.instances?.length) {
    items.push({ label: 'Cloud instances', kind: 'separator' });
    for (const instance of catalog.instances) {
      const gpu = names.get(instance.gpu) ?? instance.gpu;
      const marker = current && comparable(current) === comparable(instance.name) ? ' (current)' : '';
      items.push({
        label: instance.name,
        description: `${instance.provider ?? ''} · ${instance.count ?? 1}× ${gpu}${marker}`,
        value: instance.name,
      });
    }
  }
  return items;
}
