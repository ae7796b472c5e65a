/**
 * Read-only Markdown documents the extension shows in a preview: a rule's documentation
 * (`torchward:/rules/TW001.md`) and an estimate report (`torchward:/report/train.py.md`).
 * A virtual document has no file and is never dirty: closing its preview asks nothing
 * (an untitled document did: "Show Estimate Report" used to leave one behind).
 */
import * as vscode from 'vscode';

import { DOCS_SCHEME } from './commands';

export class MarkdownDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '';
  }

  /** Sets the text of `torchward:/<folder>/<name>` and returns its URI. */
  set(folder: string, name: string, markdown: string): vscode.Uri {
    const uri = vscode.Uri.parse(`${DOCS_SCHEME}:/${folder}/${encodeURIComponent(name)}`);
    this.contents.set(uri.toString(), markdown);
    this.changed.fire(uri);
    return uri;
  }

  /** Shows `markdown` rendered, beside the editor. */
  async show(folder: string, name: string, markdown: string): Promise<vscode.Uri> {
    const uri = this.set(folder, name, markdown);
    await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
    return uri;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
