/**
 * The server's command line and environment, and the Python probe behind resolution.
 *
 * Node only (no `vscode` import): the end-to-end test starts the packaged server through
 * these same functions, so what it checks is the command line the extension runs.
 *
 * Bundle layout (written by scripts/bundle_server.py at packaging time):
 * `bundled/libs/` — torchward and its pure-Python dependencies, any Python >= 3.10;
 * `bundled/native/cp3XY/` — compiled dependencies (libcst, which the quick fixes need)
 * for one Python version each; a Python without its folder still lints and estimates.
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';

import type { ProbeResult, Resolution } from './interpreter';
import { type LogLevel, verbosityFlags } from './settings';

export interface ServerCommand {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

export function bundleRoot(extensionRoot: string): string {
  return path.join(extensionRoot, 'bundled');
}

export function hasBundle(extensionRoot: string): boolean {
  return existsSync(path.join(bundleRoot(extensionRoot), 'libs', 'torchward', '__init__.py'));
}

export function bundledPath(extensionRoot: string, version: [number, number]): string[] {
  const root = bundleRoot(extensionRoot);
  const native = path.join(root, 'native', `cp${version[0]}${version[1]}`);
  return [path.join(root, 'libs'), ...(existsSync(native) ? [native] : [])];
}

/** PYTHONPATH with `entries` first; the user's own PYTHONPATH is kept after them. */
export function withPythonPath(env: NodeJS.ProcessEnv, entries: string[]): NodeJS.ProcessEnv {
  if (entries.length === 0) {
    return { ...env };
  }
  const existing = env.PYTHONPATH ? [env.PYTHONPATH] : [];
  return { ...env, PYTHONPATH: [...entries, ...existing].join(path.delimiter) };
}

export function serverCommand(
  resolution: Exclude<Resolution, { kind: 'none' }>,
  logLevel: LogLevel,
  env: NodeJS.ProcessEnv = process.env,
): ServerCommand {
  const lspArgs = ['lsp', '--stdio', ...verbosityFlags(logLevel)];
  switch (resolution.kind) {
    case 'executable':
      return { command: resolution.command, args: lspArgs, env: { ...env } };
    case 'environment':
      return { command: resolution.python, args: ['-m', 'torchward', ...lspArgs], env: { ...env } };
    case 'bundled':
      return {
        command: resolution.python,
        args: ['-m', 'torchward', ...lspArgs],
        env: withPythonPath({ ...env, PYTHONNOUSERSITE: '1' }, resolution.pythonPath),
      };
  }
}

/** The same program with other `torchward` arguments (the GPU list, the estimate report). */
export function cliCommand(server: ServerCommand, args: string[]): ServerCommand {
  const lsp = server.args.indexOf('lsp');
  return { command: server.command, args: [...server.args.slice(0, lsp), ...args], env: server.env };
}

export function runCommand(command: ServerCommand, timeoutMs = 30_000): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    execFile(
      command.command,
      command.args,
      { env: command.env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, windowsHide: true },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ stdout: String(stdout), stderr: String(stderr || (error && code === -1 ? error.message : '')), code });
      },
    );
  });
}

const PROBE = [
  'import json, sys',
  'info = {"version": list(sys.version_info[:2])}',
  'try:',
  '    import torchward, torchward.server.server',
  '    info["torchward"] = torchward.__version__',
  'except Exception as error:',
  '    info["error"] = repr(error)',
  'print(json.dumps(info))',
].join('\n');

/** Ask a Python its version and whether torchward's server imports; undefined when it does not run. */
export async function probePython(python: string, extraPath: string[] = [], env: NodeJS.ProcessEnv = process.env): Promise<ProbeResult | undefined> {
  const base = extraPath.length ? { ...env, PYTHONNOUSERSITE: '1' } : env;
  const result = await runCommand({ command: python, args: ['-c', PROBE], env: withPythonPath(base, extraPath) }, 20_000);
  if (result.code !== 0) {
    return undefined;
  }
  try {
    const info = JSON.parse(result.stdout.trim().split('\n').pop() ?? '');
    if (!Array.isArray(info.version)) {
      return undefined;
    }
    return { version: [info.version[0], info.version[1]], torchward: info.torchward, error: info.error };
  } catch {
    return undefined;
  }
}

export function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

export const PATH_PYTHONS = process.platform === 'win32' ? ['py', 'python'] : ['python3', 'python'];
