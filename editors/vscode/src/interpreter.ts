/**
 * Which program runs the server. Resolution order (first that works wins):
 *
 * 1. `torchward.path` — a `torchward` executable, run as `torchward lsp --stdio`;
 * 2. `torchward.interpreter` — a Python whose environment has torchward installed;
 * 3. the Python extension's active interpreter, when torchward is installed there;
 * 4. the bundled server (bundled/libs, vendored at packaging time) run by the first
 *    Python >= 3.10 among: `torchward.interpreter`, the Python extension's interpreter,
 *    `python3` / `python` on PATH.
 *
 * `importStrategy: "useBundled"` skips 2 and 3 (an explicit `torchward.path` still wins:
 * it is the most specific thing a user can say). When nothing works the result carries
 * a message that names the fix. Everything outside (probing a Python, the Python
 * extension, the file system) is injected, so this module is plain logic.
 */
import type { ClientSettings } from './settings';

export const MIN_PYTHON: [number, number] = [3, 10];

export interface ProbeResult {
  /** `[major, minor]` of the interpreter. */
  version: [number, number];
  /** torchward's version when `torchward.server` imports, else undefined. */
  torchward?: string;
  error?: string;
}

export interface ResolverDeps {
  settings: ClientSettings;
  /** The Python extension's interpreter for the resource, undefined when it is not installed. */
  pythonExtensionInterpreter(): Promise<string | undefined>;
  /** Run the interpreter with PYTHONPATH = `extraPath` (when given); undefined when it does not start. */
  probe(python: string, extraPath?: string[]): Promise<ProbeResult | undefined>;
  isFile(path: string): boolean;
  /** Whether this build of the extension carries the bundled server. */
  hasBundle: boolean;
  /** The bundled libraries' folders (PYTHONPATH entries) for a Python version. */
  bundledPath(version: [number, number]): string[];
  /** Interpreter names to look up on PATH, in order. */
  pathPythons: string[];
}

export type Source = 'setting:path' | 'setting:interpreter' | 'python-extension' | 'PATH';

export type Resolution =
  | { kind: 'executable'; command: string; source: Source }
  | { kind: 'environment'; python: string; version: string; source: Source }
  | { kind: 'bundled'; python: string; pythonPath: string[]; version: string; source: Source }
  | { kind: 'none'; message: string; tried: string[] };

export function isSupported(version: [number, number]): boolean {
  return version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1]);
}

export async function resolveServer(deps: ResolverDeps): Promise<Resolution> {
  const { settings } = deps;
  const tried: string[] = [];

  for (const command of settings.path) {
    if (deps.isFile(command)) {
      return { kind: 'executable', command, source: 'setting:path' };
    }
    tried.push(`torchward.path: ${command} does not exist`);
  }

  const pythonExtension = await deps.pythonExtensionInterpreter();
  const candidates: Array<[string, Source]> = [
    ...settings.interpreter.map((python): [string, Source] => [python, 'setting:interpreter']),
    ...(pythonExtension ? [[pythonExtension, 'python-extension'] as [string, Source]] : []),
  ];
  const probed = new Map<string, ProbeResult | undefined>();
  const probe = async (python: string) => {
    if (!probed.has(python)) {
      probed.set(python, await deps.probe(python));
    }
    return probed.get(python);
  };

  if (settings.importStrategy === 'fromEnvironment') {
    for (const [python, source] of candidates) {
      const result = await probe(python);
      if (result?.torchward) {
        return { kind: 'environment', python, version: result.torchward, source };
      }
      tried.push(`${python} (${source}): ${result ? 'torchward is not installed there' : 'does not run'}`);
    }
  }

  if (!deps.hasBundle) {
    tried.push('this build of the extension has no bundled server');
    return { kind: 'none', message: noServerMessage(settings), tried };
  }
  const bundleCandidates: Array<[string, Source]> = [
    ...candidates,
    ...deps.pathPythons.map((python): [string, Source] => [python, 'PATH']),
  ];
  let ran = 0;
  for (const [python, source] of bundleCandidates) {
    const result = await probe(python);
    if (!result) {
      if (source !== 'PATH') {
        tried.push(`${python} (${source}): does not run`);
      }
      continue;
    }
    ran += 1;
    if (!isSupported(result.version)) {
      tried.push(`${python} (${source}): Python ${result.version.join('.')} is older than ${MIN_PYTHON.join('.')}`);
      continue;
    }
    const pythonPath = deps.bundledPath(result.version);
    const bundled = await deps.probe(python, pythonPath);
    if (bundled?.torchward) {
      return { kind: 'bundled', python, pythonPath, version: bundled.torchward, source };
    }
    tried.push(`${python} (${source}) with the bundled server: ${bundled?.error ?? 'does not start'}`);
  }
  if (ran === 0) {
    tried.push(`no Python interpreter found (${deps.pathPythons.join(', ')} on PATH)`);
  }
  return { kind: 'none', message: noServerMessage(settings), tried };
}

export function noServerMessage(settings: ClientSettings): string {
  const strategy =
    settings.importStrategy === 'useBundled'
      ? ''
      : ' or run `pip install torchward` in the selected interpreter\'s environment';
  return (
    'torchward: no way to start the language server. Select a Python 3.10+ interpreter ' +
    '(command "Python: Select Interpreter"), or set "torchward.interpreter" to one' +
    strategy +
    '. See "torchward: Show Logs" for what was tried.'
  );
}

export function describe(resolution: Resolution): string {
  switch (resolution.kind) {
    case 'executable':
      return `${resolution.command} (from ${resolution.source})`;
    case 'environment':
      return `torchward ${resolution.version} in ${resolution.python} (from ${resolution.source})`;
    case 'bundled':
      return `bundled torchward ${resolution.version} run by ${resolution.python} (from ${resolution.source})`;
    case 'none':
      return 'none';
  }
}
