/** The status bar item: the GPU fit of the active editor's document (see gpufit.ts). */
import * as vscode from 'vscode';

import { COMMANDS, SERVER_COMMANDS } from './commands';
import { type GpuFit, explainsWhy, renderFit } from './gpufit';

export const PICK_GPU_COMMAND = COMMANDS.pickGpu;
/** A server command; the extension answers it itself (middleware.ts) with a message. */
export const WHY_NO_JOB_COMMAND = SERVER_COMMANDS.whyNoJob;

/**
 * The notebook of a cell's document: `vscode-notebook-cell:/w/nb.ipynb#W1s…` →
 * `file:///w/nb.ipynb`. The server analyses a notebook as one program (LSP notebook
 * sync) and sends one fit, for the notebook; every cell shows it.
 */
export function notebookOf(uri: string): string | undefined {
  const match = /^vscode-notebook-cell:(?:\/\/[^/]*)?(\/[^#?]*)/.exec(uri);
  return match ? `file://${match[1]}` : undefined;
}

export class GpuFitStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly fits = new Map<string, GpuFit>();
  private readonly subscriptions: vscode.Disposable[] = [];
  private problem: string | undefined;

  constructor() {
    this.item = vscode.window.createStatusBarItem('torchward.gpuFit', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'torchward GPU fit';
    this.item.command = PICK_GPU_COMMAND;
    this.subscriptions.push(vscode.window.onDidChangeActiveTextEditor(() => this.refresh()));
  }

  update(fit: GpuFit): void {
    this.fits.set(fit.uri, fit);
    this.refresh();
  }

  fitFor(uri: string | undefined): GpuFit | undefined {
    if (uri === undefined) {
      return undefined;
    }
    const notebook = notebookOf(uri);
    return this.fits.get(uri) ?? (notebook === undefined ? undefined : this.fits.get(notebook));
  }

  /** The GPU of the latest fit of any document (the session's GPU when none is active). */
  lastGpu(): string | undefined {
    return [...this.fits.values()].reverse().find((fit) => fit.gpu)?.gpu ?? undefined;
  }

  /** Shown instead of a fit while the server cannot start. */
  setProblem(message: string | undefined): void {
    this.problem = message;
    this.refresh();
  }

  clear(): void {
    this.fits.clear();
    this.refresh();
  }

  refresh(): void {
    if (this.problem) {
      this.item.text = '$(error) torchward';
      this.item.tooltip = this.problem;
      this.item.command = COMMANDS.showLogs;
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      this.item.show();
      return;
    }
    const uri = vscode.window.activeTextEditor?.document.uri.toString();
    const fit = this.fitFor(uri);
    this.item.command = explainsWhy(fit) ? { title: 'Why?', command: WHY_NO_JOB_COMMAND, arguments: [fit.uri] } : PICK_GPU_COMMAND;
    const view = renderFit(fit);
    if (!view.visible) {
      this.item.hide();
      return;
    }
    this.item.text = view.text;
    const tooltip = new vscode.MarkdownString(view.tooltip);
    tooltip.isTrusted = true;
    tooltip.supportThemeIcons = true;
    this.item.tooltip = tooltip;
    this.item.backgroundColor =
      view.tone === 'normal'
        ? undefined
        : new vscode.ThemeColor(view.tone === 'error' ? 'statusBarItem.errorBackground' : 'statusBarItem.warningBackground');
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
    this.subscriptions.forEach((subscription) => subscription.dispose());
  }
}
