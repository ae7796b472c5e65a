/** The language client: which documents, which settings, and how the server is started. */
import * as vscode from 'vscode';
import {
  type ConfigurationParams,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';

import type { ServerCommand } from './launch';
import { toWire, type WireSettings } from './settings';

export const CLIENT_ID = 'torchward';
export const SECTION = 'torchward';

/** Python files on disk and unsaved, and the Python cells of notebooks. */
export const DOCUMENT_SELECTOR = [
  { scheme: 'file', language: 'python' },
  { scheme: 'untitled', language: 'python' },
  { notebook: '*', language: 'python' },
];

export function wireSettings(scope?: vscode.ConfigurationScope | null): WireSettings {
  const configuration = vscode.workspace.getConfiguration(SECTION, scope);
  return toWire((key) => configuration.get(key));
}

/** Answers `workspace/configuration` for the `torchward` section with the wire mapping. */
export function answerConfiguration(params: ConfigurationParams): unknown[] {
  return params.items.map((item) =>
    item.section === SECTION ? wireSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined) : null,
  );
}

export function clientOptions(output: vscode.LogOutputChannel): LanguageClientOptions {
  return {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: output,
    traceOutputChannel: output,
    revealOutputChannelOn: 4, // RevealOutputChannelOn.Never
    initializationOptions: wireSettings(),
    middleware: {
      workspace: {
        configuration: (params, token, next) => {
          const answers = answerConfiguration(params);
          if (answers.every((answer) => answer !== null)) {
            return answers;
          }
          return Promise.resolve(next(params, token)).then((fallback) =>
            Array.isArray(fallback) ? answers.map((answer, index) => answer ?? fallback[index]) : fallback,
          );
        },
      },
    },
  };
}

export function createClient(command: ServerCommand, output: vscode.LogOutputChannel): LanguageClient {
  const serverOptions: ServerOptions = {
    command: command.command,
    args: command.args,
    options: { env: command.env },
  };
  return new LanguageClient(CLIENT_ID, 'torchward', serverOptions, clientOptions(output));
}
