import * as path from 'node:path';

import { describe, expect, it } from 'vitest';

import { type ProbeResult, type ResolverDeps, resolveServer } from '../../src/interpreter';
import { cliCommand, probePython, serverCommand, withPythonPath } from '../../src/launch';
import { clientSettings } from '../../src/settings';

const BUNDLE = ['/ext/bundled/libs'];

interface World {
  settings?: Record<string, unknown>;
  pythonExtension?: string;
  /** python → its probe without the bundle; absent: it does not run. */
  pythons?: Record<string, ProbeResult>;
  /** pythons that can run the bundled server */
  bundleRuns?: string[];
  files?: string[];
  hasBundle?: boolean;
  pathPythons?: string[];
}

function deps(world: World): ResolverDeps & { probes: string[] } {
  const probes: string[] = [];
  return {
    probes,
    settings: clientSettings((key) => world.settings?.[key]),
    pythonExtensionInterpreter: async () => world.pythonExtension,
    probe: async (python, extra) => {
      probes.push(extra ? `${python} +bundle` : python);
      const found = world.pythons?.[python];
      if (!found) {
        return undefined;
      }
      if (extra) {
        return world.bundleRuns?.includes(python)
          ? { version: found.version, torchward: '0.1.0' }
          : { version: found.version, error: "ModuleNotFoundError('pygls')" };
      }
      return found;
    },
    isFile: (file) => world.files?.includes(file) ?? false,
    hasBundle: world.hasBundle ?? true,
    bundledPath: () => BUNDLE,
    pathPythons: world.pathPythons ?? ['python3', 'python'],
  };
}

const withTorchward: ProbeResult = { version: [3, 11], torchward: '0.1.0' };
const plain311: ProbeResult = { version: [3, 11] };

describe('interpreter resolution', () => {
  it('runs the torchward.path executable when it exists, before any interpreter', async () => {
    const world = deps({
      settings: { path: ['/missing/torchward', '/venv/bin/torchward'], interpreter: ['/venv/bin/python'] },
      files: ['/venv/bin/torchward'],
      pythons: { '/venv/bin/python': withTorchward },
    });
    expect(await resolveServer(world)).toEqual({ kind: 'executable', command: '/venv/bin/torchward', source: 'setting:path' });
    expect(world.probes).toEqual([]);
  });

  it('uses the torchward.interpreter setting before the Python extension when torchward is installed there', async () => {
    const resolution = await resolveServer(
      deps({
        settings: { interpreter: ['/venv/bin/python'] },
        pythonExtension: '/conda/bin/python',
        pythons: { '/venv/bin/python': withTorchward, '/conda/bin/python': withTorchward },
      }),
    );
    expect(resolution).toEqual({ kind: 'environment', python: '/venv/bin/python', version: '0.1.0', source: 'setting:interpreter' });
  });

  it("uses the Python extension's active interpreter when torchward is installed there", async () => {
    const resolution = await resolveServer(deps({ pythonExtension: '/conda/bin/python', pythons: { '/conda/bin/python': withTorchward } }));
    expect(resolution).toMatchObject({ kind: 'environment', python: '/conda/bin/python', source: 'python-extension' });
  });

  it("falls back to the bundled server run by the Python extension's interpreter when torchward is not installed", async () => {
    const resolution = await resolveServer(
      deps({ pythonExtension: '/conda/bin/python', pythons: { '/conda/bin/python': plain311, python3: plain311 }, bundleRuns: ['/conda/bin/python'] }),
    );
    expect(resolution).toEqual({ kind: 'bundled', python: '/conda/bin/python', pythonPath: BUNDLE, version: '0.1.0', source: 'python-extension' });
  });

  it('useBundled skips the environments even when torchward is installed there', async () => {
    const world = deps({
      settings: { importStrategy: 'useBundled' },
      pythonExtension: '/venv/bin/python',
      pythons: { '/venv/bin/python': withTorchward },
      bundleRuns: ['/venv/bin/python'],
    });
    expect(await resolveServer(world)).toMatchObject({ kind: 'bundled', python: '/venv/bin/python' });
    expect(world.probes).toEqual(['/venv/bin/python', '/venv/bin/python +bundle']);
  });

  it('runs the bundle with python3 from PATH when no interpreter is configured and there is no Python extension', async () => {
    const resolution = await resolveServer(deps({ pythons: { python3: plain311 }, bundleRuns: ['python3'] }));
    expect(resolution).toMatchObject({ kind: 'bundled', python: 'python3', source: 'PATH' });
  });

  it('skips interpreters older than Python 3.10 for the bundle and says so', async () => {
    const resolution = await resolveServer(
      deps({ pythonExtension: '/old/python', pythons: { '/old/python': { version: [3, 8] }, python: plain311 }, bundleRuns: ['python'] }),
    );
    expect(resolution).toMatchObject({ kind: 'bundled', python: 'python', source: 'PATH' });
  });

  it('answers with a message naming the fix, and what was tried, when nothing works', async () => {
    const resolution = await resolveServer(deps({ settings: { path: ['/nope/torchward'] }, pythons: { python3: { version: [3, 9] } } }));
    expect(resolution.kind).toBe('none');
    if (resolution.kind !== 'none') return;
    expect(resolution.message).toMatch(/Python: Select Interpreter/);
    expect(resolution.message).toMatch(/torchward\.interpreter/);
    expect(resolution.message).toMatch(/pip install torchward/);
    expect(resolution.tried).toEqual([
      'torchward.path: /nope/torchward does not exist',
      'python3 (PATH): Python 3.9 is older than 3.10',
    ]);
  });

  it('says when no Python runs at all', async () => {
    const resolution = await resolveServer(deps({}));
    expect(resolution).toMatchObject({ kind: 'none', tried: ['no Python interpreter found (python3, python on PATH)'] });
  });

  it('says when this build has no bundled server', async () => {
    const resolution = await resolveServer(deps({ hasBundle: false, pythons: { python3: plain311 } }));
    expect(resolution).toMatchObject({ kind: 'none', tried: ['this build of the extension has no bundled server'] });
  });

  it('reports a bundle that does not import instead of starting it', async () => {
    const resolution = await resolveServer(deps({ settings: { importStrategy: 'useBundled' }, pythons: { python3: plain311 } }));
    expect(resolution).toMatchObject({ kind: 'none', tried: ["python3 (PATH) with the bundled server: ModuleNotFoundError('pygls')"] });
  });
});

describe('server command line', () => {
  it('runs a torchward executable as `torchward lsp --stdio`', () => {
    const command = serverCommand({ kind: 'executable', command: '/venv/bin/torchward', source: 'setting:path' }, 'warning', {});
    expect([command.command, ...command.args]).toEqual(['/venv/bin/torchward', 'lsp', '--stdio']);
  });

  it('runs an environment as `python -m torchward lsp --stdio` with the log level as -v flags', () => {
    const command = serverCommand({ kind: 'environment', python: '/venv/bin/python', version: '0.1.0', source: 'python-extension' }, 'debug', { HOME: '/root' });
    expect([command.command, ...command.args]).toEqual(['/venv/bin/python', '-m', 'torchward', 'lsp', '--stdio', '-vv']);
    expect(command.env).toEqual({ HOME: '/root' });
  });

  it("puts the bundle first on PYTHONPATH, keeps the user's entries after it and ignores user site-packages", () => {
    const command = serverCommand(
      { kind: 'bundled', python: 'python3', pythonPath: ['/ext/bundled/libs', '/ext/bundled/native/cp311'], version: '0.1.0', source: 'PATH' },
      'info',
      { PYTHONPATH: '/mine' },
    );
    expect(command.args).toEqual(['-m', 'torchward', 'lsp', '--stdio', '-v']);
    expect(command.env.PYTHONPATH).toBe(['/ext/bundled/libs', '/ext/bundled/native/cp311', '/mine'].join(path.delimiter));
    expect(command.env.PYTHONNOUSERSITE).toBe('1');
  });

  it('runs other torchward commands with the same program and environment', () => {
    const server = serverCommand({ kind: 'environment', python: 'py', version: '0.1.0', source: 'PATH' }, 'info', {});
    expect(cliCommand(server, ['gpus', '--format', 'json']).args).toEqual(['-m', 'torchward', 'gpus', '--format', 'json']);
    const executable = serverCommand({ kind: 'executable', command: 'tw', source: 'setting:path' }, 'info', {});
    expect(cliCommand(executable, ['gpus']).args).toEqual(['gpus']);
  });

  it('leaves PYTHONPATH alone when there is nothing to add', () => {
    expect(withPythonPath({ PYTHONPATH: '/mine' }, [])).toEqual({ PYTHONPATH: '/mine' });
  });
});

describe('probing a real Python', () => {
  it('reads the version of python3 and says torchward is missing from an empty path', async () => {
    const result = await probePython('python3', [], { ...process.env, PYTHONPATH: '' });
    expect(result?.version[0]).toBe(3);
  });

  it('answers undefined for a program that does not exist', async () => {
    expect(await probePython('/nonexistent/python')).toBeUndefined();
  });
});
