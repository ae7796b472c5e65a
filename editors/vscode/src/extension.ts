/**
 * The extension is a launcher: resolve the server (interpreter.ts), start it
 * (client.ts), pass settings (settings.ts), and show what it sends back that VS Code has
 * no place for by itself — the GPU fit (statusbar.ts) and the estimate report.
 */
import * as path from 'node:path';

import * as vscode from 'vscode';
import { ExecuteCommandRequest, type LanguageClient } from 'vscode-languageclient/node';

import { createClient } from './client';
import {
  COMMANDS,
  DOCS_SCHEME,
  ESTIMATE_REQUEST,
  FIX_ALL_KIND,
  GPU_FIT_NOTIFICATION,
  RULE_DOCUMENTATION_REQUEST,
  SERVER_COMMANDS,
} from './commands';
import { MarkdownDocuments } from './documents';
import { type GpuFit, explainsWhy, noJobTitle } from './gpufit';
import { type GpuCatalog, gpuItems } from './gpus';
import { describe, type Resolution, resolveServer } from './interpreter';
import {
  bundledPath,
  cliCommand,
  hasBundle,
  isFile,
  PATH_PYTHONS,
  probePython,
  runCommand,
  type ServerCommand,
  serverCommand,
} from './launch';
import { CONSENT_KEY, installTorch, measure, type MeasureUi, type TorchStatus, topLevelFunctions } from './measure';
import { activeInterpreter, onInterpreterChanged } from './pythonExtension';
import { type EstimateJson, reportMarkdown } from './report';
import { needsRestart } from './settings';
import { GpuFitStatus } from './statusbar';
import { currentClientSettings, SECTION, wireSettings } from './workspaceSettings';

interface RuleDocumentation {
  code: string;
  markdown: string | null;
  url: string | null;
  error?: string;
}

class Session implements vscode.Disposable {
  client: LanguageClient | undefined;
  command: ServerCommand | undefined;
  resolution: Resolution | undefined;
  selectedGpu: string | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly output: vscode.LogOutputChannel,
    readonly status: GpuFitStatus,
    readonly documents: MarkdownDocuments,
  ) {}

  restart(): Promise<void> {
    const previous = this.starting ?? Promise.resolve();
    this.starting = previous.then(() => this.doRestart()).finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doRestart(): Promise<void> {
    await this.stop();
    const settings = currentClientSettings();
    const root = this.context.extensionPath;
    const resource = vscode.window.activeTextEditor?.document.uri ?? vscode.workspace.workspaceFolders?.[0]?.uri;
    this.resolution = await resolveServer({
      settings,
      pythonExtensionInterpreter: () => activeInterpreter(resource),
      probe: (python, extra) => probePython(python, extra),
      isFile,
      hasBundle: hasBundle(root),
      bundledPath: (version) => bundledPath(root, version),
      pathPythons: PATH_PYTHONS,
    });
    if (this.resolution.kind === 'none') {
      this.output.error(this.resolution.message);
      this.resolution.tried.forEach((line) => this.output.info(`  tried: ${line}`));
      this.status.setProblem(this.resolution.message);
      void vscode.window
        .showErrorMessage(this.resolution.message, 'Select Interpreter', 'Open Settings', 'Show Logs')
        .then((choice) => {
          if (choice === 'Select Interpreter') {
            void vscode.commands.executeCommand('python.setInterpreter');
          } else if (choice === 'Open Settings') {
            void vscode.commands.executeCommand('workbench.action.openSettings', 'torchward.');
          } else if (choice === 'Show Logs') {
            this.output.show();
          }
        });
      return;
    }
    this.status.setProblem(undefined);
    this.command = serverCommand(this.resolution, settings.logLevel);
    this.output.info(`Starting the server: ${describe(this.resolution)}`);
    this.output.info(`  ${[this.command.command, ...this.command.args].join(' ')}`);
    const client = createClient(this.command, this.output, {
      pickGpu: async () => vscode.commands.executeCommand(COMMANDS.pickGpu),
      explain: (code) => this.explain(code),
      whyNoJob: (uri) => this.whyNoJob(uri),
      measure: (uri, options, run) => measure(uri, options, this.measureUi(), run),
      installTorch: () => installTorch(this.measureUi()),
    });
    client.onNotification(GPU_FIT_NOTIFICATION, (fit: GpuFit) => this.status.update(fit));
    this.client = client;
    try {
      await client.start();
      if (this.selectedGpu) {
        await this.selectGpu(this.selectedGpu);
      }
    } catch (error) {
      this.output.error(`The server did not start: ${String(error)}`);
      this.status.setProblem(`torchward: the server did not start (${String(error)}). See "torchward: Show Logs".`);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.status.clear();
    if (client) {
      try {
        await client.stop(2000);
      } catch (error) {
        this.output.warn(`Stopping the server: ${String(error)}`);
      }
    }
  }

  async selectGpu(name: string): Promise<void> {
    this.selectedGpu = name;
    if (!this.client) {
      return;
    }
    const answer = await this.client.sendRequest(ExecuteCommandRequest.type, { command: SERVER_COMMANDS.selectGpu, arguments: [name] });
    this.output.info(`Selected GPU ${name}: ${JSON.stringify(answer)}`);
  }

  /** "Explain TWxxx": the rule's documentation in a Markdown preview, inside the editor. */
  async explain(code: string): Promise<unknown> {
    if (!this.client) {
      return undefined;
    }
    const answer = (await this.client.sendRequest(RULE_DOCUMENTATION_REQUEST, { code })) as RuleDocumentation;
    if (!answer.markdown) {
      void vscode.window.showWarningMessage(`torchward: ${answer.error ?? `no documentation for ${code}`}`);
      return answer;
    }
    await this.documents.show('rules', `${answer.code}.md`, answer.markdown);
    return answer;
  }

  /** "no job found — Why?" / "no training job": the reason and the next step, with the
   * file to edit when the next step is naming the model in pyproject.toml. */
  async whyNoJob(uri: string | undefined): Promise<unknown> {
    const fit = this.status.fitFor(uri ?? vscode.window.activeTextEditor?.document.uri.toString());
    if (!explainsWhy(fit)) {
      return undefined;
    }
    const open = 'Open pyproject.toml';
    // the next step goes in the message: a toast (non-modal) does not show `detail`
    const next = fit.hint ? ` Next step: ${fit.hint}.` : '';
    const choice = await vscode.window.showInformationMessage(
      `${noJobTitle(fit)} — ${fit.reason ?? ''}.${next}`,
      ...(fit.status === 'no-job' ? [open] : []),
    );
    if (choice === open) {
      const [project] = await vscode.workspace.findFiles('pyproject.toml', '**/node_modules/**', 1);
      if (project) {
        await vscode.window.showTextDocument(project);
      }
    }
    return fit;
  }

  /** What Measure asks and shows, in VS Code (./measure.ts holds the logic). */
  measureUi(): MeasureUi {
    const state = this.context.workspaceState;
    const resolution = this.resolution;
    const python = resolution && (resolution.kind === 'environment' || resolution.kind === 'bundled') ? resolution.python : undefined;
    const tell = (kind: 'info' | 'warning' | 'error', message: string, actions: string[]) =>
      Promise.resolve(
        kind === 'error'
          ? vscode.window.showErrorMessage(message, ...actions)
          : kind === 'warning'
            ? vscode.window.showWarningMessage(message, ...actions)
            : vscode.window.showInformationMessage(message, ...actions),
      );
    return {
      isTrusted: () => vscode.workspace.isTrusted,
      interpreter: () => python,
      consented: () => state.get<string[]>(CONSENT_KEY, []),
      rememberConsent: async (interpreters) => state.update(CONSENT_KEY, interpreters),
      // the server decides (server/torch_probe.py), straight to it: not through the middleware
      torch: async (candidate) =>
        ((await this.client?.sendRequest(ExecuteCommandRequest.type, {
          command: SERVER_COMMANDS.installTorch,
          arguments: [null, { interpreter: candidate, quiet: true }],
        })) as TorchStatus | undefined) ?? { python: candidate, importable: null, command: '' },
      askModal: async (message, detail, actions) => vscode.window.showWarningMessage(message, { modal: true, detail }, ...actions),
      tell,
      copy: async (text) => vscode.env.clipboard.writeText(text),
      functionsOf: async (uri) => topLevelFunctions((await vscode.workspace.openTextDocument(vscode.Uri.parse(uri))).getText()),
      pick: async (items, placeHolder) => vscode.window.showQuickPick(items, { placeHolder }),
    };
  }

  async runCli(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
    if (!this.command) {
      return { stdout: '', stderr: 'the server is not running', code: -1 };
    }
    return runCommand(cliCommand(this.command, args), 60_000);
  }

  dispose(): void {
    void this.stop();
  }
}

async function pickGpu(session: Session): Promise<void> {
  const result = await session.runCli(['gpus', '--instances', '--format', 'json']);
  let catalog: GpuCatalog = {};
  try {
    catalog = JSON.parse(result.stdout) as GpuCatalog;
  } catch {
    session.output.warn(`Could not list GPUs: ${result.stderr.trim() || 'no output'}`);
  }
  const editor = vscode.window.activeTextEditor;
  // the GPU the server estimates for: selectGpu, else the targetGpu setting, else pyproject's target-gpu
  const current = session.status.fitFor(editor?.document.uri.toString())?.gpu ?? session.selectedGpu ?? session.status.lastGpu();
  const other = { label: '$(edit) Another GPU or instance…', value: undefined as string | undefined, other: true };
  const items = gpuItems(catalog, current).map((item) =>
    item.kind === 'separator'
      ? { label: item.label, kind: vscode.QuickPickItemKind.Separator, value: undefined, other: false }
      : { label: item.label, description: item.description, value: item.value, other: false },
  );
  const choice = await vscode.window.showQuickPick([other, ...items], {
    title: 'torchward: GPU or cloud instance to estimate for',
    placeHolder: current ? `Now: ${current}` : 'Pick the GPU the job will run on',
    matchOnDescription: true,
  });
  if (!choice) {
    return;
  }
  const name = choice.other
    ? await vscode.window.showInputBox({ prompt: 'GPU name or instance type (e.g. "A100 80GB", p4d.24xlarge, 8xh100)' })
    : choice.value;
  if (name) {
    await session.selectGpu(name);
  }
}

async function showEstimateReport(session: Session): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== 'python') {
    void vscode.window.showInformationMessage('torchward: open a Python training script first.');
    return;
  }
  const document = editor.document;
  let fit: GpuFit | undefined;
  if (session.client) {
    fit = (await session.client.sendRequest(ESTIMATE_REQUEST, { uri: document.uri.toString() })) as GpuFit;
  }
  let estimate: EstimateJson | undefined;
  let problem: string | undefined;
  if (document.uri.scheme === 'file') {
    if (document.isDirty) {
      await document.save();
    }
    const gpu = session.selectedGpu ?? vscode.workspace.getConfiguration(SECTION, document.uri).get<string>('targetGpu');
    const args = ['estimate', document.uri.fsPath, '--format', 'json', ...(gpu ? ['--gpu', gpu] : [])];
    const result = await session.runCli(args);
    try {
      estimate = JSON.parse(result.stdout) as EstimateJson;
    } catch {
      problem = result.stderr.trim().replace(/^torchward: error: /, '') || 'no output';
    }
  }
  const markdown = reportMarkdown(path.basename(document.uri.fsPath), estimate, fit, problem);
  // a virtual document: never an Untitled buffer left dirty behind the preview
  await session.documents.show('report', `${path.basename(document.uri.fsPath)}.md`, markdown);
}

async function fixAll(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    return;
  }
  const document = editor.document;
  const range = new vscode.Range(0, 0, document.lineCount, 0);
  // The server sends fix-all without its edit to clients that resolve (codeAction/resolve);
  // the fourth argument asks VS Code to resolve that many actions.
  const actions =
    (await vscode.commands.executeCommand<vscode.CodeAction[]>(
      'vscode.executeCodeActionProvider',
      document.uri,
      range,
      FIX_ALL_KIND,
      10,
    )) ?? [];
  const action = actions.find((candidate) => candidate.kind?.value === FIX_ALL_KIND);
  if (!action?.edit && !action?.command) {
    void vscode.window.showInformationMessage('torchward: nothing to fix safely in this file.');
    return;
  }
  if (action.edit) {
    await vscode.workspace.applyEdit(action.edit);
  }
  if (action.command) {
    await vscode.commands.executeCommand(action.command.command, ...(action.command.arguments ?? []));
  }
}

let session: Session | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('torchward', { log: true });
  const status = new GpuFitStatus();
  const documents = new MarkdownDocuments();
  session = new Session(context, output, status, documents);
  const current = session;
  context.subscriptions.push(
    output,
    status,
    documents,
    vscode.workspace.registerTextDocumentContentProvider(DOCS_SCHEME, documents),
    current,
    vscode.commands.registerCommand(COMMANDS.pickGpu, () => pickGpu(current)),
    vscode.commands.registerCommand(COMMANDS.showEstimateReport, () => showEstimateReport(current)),
    vscode.commands.registerCommand(COMMANDS.fixAll, fixAll),
    vscode.commands.registerCommand(COMMANDS.restart, () => current.restart()),
    vscode.commands.registerCommand(COMMANDS.showLogs, () => output.show()),
    vscode.commands.registerCommand(COMMANDS.measureActive, async () => {
      const editor = vscode.window.activeTextEditor;
      if (editor?.document.languageId === 'python') {
        // the server's command, through the middleware: trust, torch and consent first
        await vscode.commands.executeCommand(SERVER_COMMANDS.measure, editor.document.uri.toString());
      }
    }),
    vscode.commands.registerCommand(COMMANDS.planActive, async () => {
      const editor = vscode.window.activeTextEditor;
      if (editor?.document.languageId !== 'python') {
        void vscode.window.showInformationMessage('torchward: open a Python training script first.');
        return;
      }
      // the server plans the job of the document's last estimate (server/plan.py): its answer
      // comes back as a message, then as the code lens "cheapest fit: …" on the training entry
      await vscode.commands.executeCommand(SERVER_COMMANDS.plan, editor.document.uri.toString());
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (needsRestart((section) => event.affectsConfiguration(section))) {
        void current.restart();
      } else if (event.affectsConfiguration(SECTION) && current.client) {
        // A server that can ask (workspace/configuration) asks again; the payload is for one that cannot.
        void current.client.sendNotification('workspace/didChangeConfiguration', { settings: { [SECTION]: wireSettings() } });
      }
    }),
  );
  const interpreterWatch = await onInterpreterChanged(() => {
    if (currentClientSettings().path.length === 0) {
      void current.restart();
    }
  });
  if (interpreterWatch) {
    context.subscriptions.push(interpreterWatch);
  }
  await current.restart();
}

export async function deactivate(): Promise<void> {
  await session?.stop();
  session = undefined;
}
