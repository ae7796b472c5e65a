/**
 * The packaged server, started as the extension starts it: the same resolution
 * (src/interpreter.ts), command line and environment (src/launch.ts) and
 * initialization options (src/settings.ts, from the defaults the .vsix declares), from
 * the unpacked .vsix, spoken to over stdio by a small LSP client that declares what
 * VS Code declares (pull diagnostics, code action resolve, workspace/configuration).
 *
 * The only departure from a default install: `importStrategy: "useBundled"`, so that a
 * torchward installed in the machine's python3 cannot stand in for the bundled one.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CodeAction,
  createProtocolConnection,
  type Diagnostic,
  DiagnosticSeverity,
  type ProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-languageserver-protocol/node';

import { ESTIMATE_REQUEST, GPU_FIT_NOTIFICATION, SERVER_COMMANDS } from '../../src/commands';
import type { GpuFit } from '../../src/gpufit';
import { resolveServer } from '../../src/interpreter';
import { bundledPath, hasBundle, isFile, PATH_PYTHONS, probePython, serverCommand } from '../../src/launch';
import { clientSettings, toWire } from '../../src/settings';
import { REPOSITORY, unpackedExtension } from './vsix';

let server: ChildProcess;
let connection: ProtocolConnection;
let workspace: string;
let uri: string;
let stderr = '';
const fits: GpuFit[] = [];
const configurationRequests: unknown[] = [];

function waitFor<T>(what: string, check: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      const value = check();
      if (value !== undefined) {
        resolve(value);
      } else if (Date.now() - started > timeoutMs) {
        reject(new Error(`timed out waiting for ${what}; server stderr:\n${stderr}`));
      } else {
        setTimeout(poll, 50);
      }
    };
    poll();
  });
}

beforeAll(async () => {
  const root = unpackedExtension();
  const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const properties: Record<string, { default?: unknown }> = manifest.contributes.configuration.properties;
  // VS Code with no user settings answers every key with its declared default.
  const values: Record<string, unknown> = Object.fromEntries(Object.entries(properties).map(([key, spec]) => [key.replace(/^torchward\./, ''), spec.default]));
  values.importStrategy = 'useBundled';
  const get = (key: string) => values[key];

  const resolution = await resolveServer({
    settings: clientSettings(get),
    pythonExtensionInterpreter: async () => undefined,
    probe: (python, extra) => probePython(python, extra),
    isFile,
    hasBundle: hasBundle(root),
    bundledPath: (version) => bundledPath(root, version),
    pathPythons: PATH_PYTHONS,
  });
  expect(resolution).toMatchObject({ kind: 'bundled' });
  if (resolution.kind !== 'bundled') throw new Error('unreachable');
  expect(resolution.pythonPath[0]).toBe(path.join(root, 'bundled', 'libs'));

  workspace = mkdtempSync(path.join(os.tmpdir(), 'torchward-e2e-'));
  copyFileSync(path.join(REPOSITORY, 'examples', 'bad_train.py'), path.join(workspace, 'train.py'));
  uri = pathToFileURL(path.join(workspace, 'train.py')).toString();

  const command = serverCommand(resolution, clientSettings(get).logLevel);
  expect(command.args).toEqual(['-m', 'torchward', 'lsp', '--stdio']);
  // vscode-languageclient spawns the Executable with its options and the workspace folder as cwd.
  server = spawn(command.command, command.args, { env: command.env, cwd: workspace });
  server.stderr!.on('data', (data) => (stderr += data.toString()));
  connection = createProtocolConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  connection.onNotification(GPU_FIT_NOTIFICATION, (fit: GpuFit) => fits.push(fit));
  connection.onRequest('workspace/configuration', (params: { items: Array<{ section?: string }> }) => {
    configurationRequests.push(params);
    return params.items.map((item) => (item.section === 'torchward' ? toWire(get) : null));
  });
  connection.onRequest('client/registerCapability', () => null);
  connection.onRequest('window/workDoneProgress/create', () => null);
  connection.onRequest('workspace/diagnostic/refresh', () => null);
  connection.onRequest('window/showDocument', () => ({ success: true }));
  connection.listen();

  const result: any = await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: pathToFileURL(workspace).toString(),
    workspaceFolders: [{ uri: pathToFileURL(workspace).toString(), name: 'e2e' }],
    initializationOptions: toWire(get),
    capabilities: {
      general: { positionEncodings: ['utf-16'] },
      workspace: {
        configuration: true,
        workspaceFolders: true,
        didChangeConfiguration: { dynamicRegistration: true },
        didChangeWatchedFiles: { dynamicRegistration: true },
        workspaceEdit: { documentChanges: true },
        executeCommand: { dynamicRegistration: true },
        diagnostics: { refreshSupport: true },
      },
      textDocument: {
        synchronization: { dynamicRegistration: true, didSave: true },
        diagnostic: { dynamicRegistration: true, relatedDocumentSupport: false },
        publishDiagnostics: { relatedInformation: true, codeDescriptionSupport: true, dataSupport: true },
        hover: { contentFormat: ['markdown', 'plaintext'] },
        codeAction: {
          codeActionLiteralSupport: { codeActionKind: { valueSet: ['', 'quickfix', 'source', 'source.fixAll'] } },
          isPreferredSupport: true,
          dataSupport: true,
          resolveSupport: { properties: ['edit'] },
        },
      },
      window: { showDocument: { support: true }, workDoneProgress: true },
    },
  });
  expect(result.serverInfo.name).toBe('torchward');
  connection.sendNotification('initialized', {});
  connection.sendNotification('textDocument/didOpen', {
    textDocument: { uri, languageId: 'python', version: 1, text: readFileSync(path.join(workspace, 'train.py'), 'utf8') },
  });
});

afterAll(async () => {
  if (connection) {
    await Promise.race([connection.sendRequest('shutdown'), new Promise((resolve) => setTimeout(resolve, 5000))]);
    connection.sendNotification('exit');
  }
  await new Promise((resolve) => (server && server.exitCode === null ? server.once('exit', resolve) : resolve(null)));
  connection?.dispose();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

describe('the bundled server started as the extension starts it', () => {
  let diagnostics: Diagnostic[] = [];

  it('answers pulled diagnostics for every marked line of the bad training script', async () => {
    const report: any = await connection.sendRequest('textDocument/diagnostic', { textDocument: { uri } });
    diagnostics = report.items;
    const text = readFileSync(path.join(workspace, 'train.py'), 'utf8').split('\n');
    const marked = new Set(text.flatMap((line) => [...line.matchAll(/# (TW\d{3})/g)].map((match) => match[1])));
    const found = new Set(diagnostics.map((diagnostic) => String(diagnostic.code)));
    expect(marked.size).toBeGreaterThan(3);
    // notes are advice: a file shows only its first one (analysis/settings.py notes_per_file);
    // hints (TW015 on a dataset that does not decode) are fainter still and not capped
    const adviceRules = new Set(['TW004', 'TW008', 'TW015']);
    for (const code of marked) {
      if (adviceRules.has(code)) continue;
      expect(found, `${code} in ${[...found].join(', ')}`).toContain(code);
    }
    const notes = diagnostics.filter((diagnostic) => diagnostic.severity === DiagnosticSeverity.Information);
    expect(notes.map((note) => String(note.code))).toHaveLength(1);
    expect(adviceRules.has(String(notes[0].code))).toBe(true);
    const hints = diagnostics.filter((diagnostic) => diagnostic.severity === DiagnosticSeverity.Hint);
    expect(hints.every((hint) => adviceRules.has(String(hint.code)))).toBe(true);
    expect(diagnostics.every((diagnostic) => diagnostic.source === 'torchward')).toBe(true);
  });

  it('sends a torchward/gpuFit notification for the opened script', async () => {
    const fit = await waitFor('torchward/gpuFit', () => fits.find((candidate) => candidate.uri === uri));
    expect(['ok', 'none', 'unavailable']).toContain(fit.status);
    expect(fit).toHaveProperty('percent');
    expect(fit).toHaveProperty('verdict');
  });

  it('asks for the torchward section, which the extension answers with the same mapping', async () => {
    await waitFor('workspace/configuration', () => (configurationRequests.length > 0 ? true : undefined));
  });

  it('offers quick fixes with edits, which need the bundled compiled libcst', async () => {
    const actions = (await connection.sendRequest('textDocument/codeAction', {
      textDocument: { uri },
      range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
      context: { diagnostics, only: ['quickfix'] },
    })) as CodeAction[];
    const fixes = actions.filter((action) => action.edit && !action.title.startsWith('Suppress'));
    expect(fixes.length, stderr).toBeGreaterThan(0);
  });

  it('re-estimates for the GPU chosen with torchward.selectGpu (what the status bar quick pick sends)', async () => {
    const before = fits.length;
    const answer: any = await connection.sendRequest('workspace/executeCommand', { command: SERVER_COMMANDS.selectGpu, arguments: ['A100 80GB'] });
    expect(answer.gpu).toBe('A100 80GB');
    const fit = await waitFor('a new gpuFit', () => fits.slice(before).find((candidate) => candidate.uri === uri));
    expect(fit.gpu).toMatch(/A100/);
    const estimate: any = await connection.sendRequest(ESTIMATE_REQUEST, { uri });
    expect(estimate.status).toBe(fit.status);
  });
});
