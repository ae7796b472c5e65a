/**
 * The Python extension's public API (`ms-python.python` exports `environments`), typed
 * here for the two calls we make instead of depending on @vscode/python-extension
 * (whose current release needs VS Code 1.93 and Node 22).
 */
import * as vscode from 'vscode';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

interface EnvironmentPath {
  id: string;
  path: string;
}

interface ResolvedEnvironment {
  executable: { uri?: vscode.Uri };
}

interface PythonApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

async function api(): Promise<PythonApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
  if (!extension) {
    return undefined;
  }
  try {
    const exports = extension.isActive ? extension.exports : await extension.activate();
    return exports?.environments ? exports : undefined;
  } catch {
    return undefined;
  }
}

/** The active interpreter's executable for `resource`, or undefined without the Python extension. */
export async function activeInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const python = await api();
  if (!python) {
    return undefined;
  }
  try {
    const environment = python.environments.getActiveEnvironmentPath(resource);
    const resolved = await python.environments.resolveEnvironment(environment);
    return resolved?.executable.uri?.fsPath ?? environment.path;
  } catch {
    return undefined;
  }
}

export async function onInterpreterChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const python = await api();
  return python?.environments.onDidChangeActiveEnvironmentPath(listener);
}
