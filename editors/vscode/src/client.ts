/** The language client: which documents, which settings, and how the server is started. */
import * as vscode from 'vscode';
import {
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';

import { COMMANDS, SERVER_COMMANDS } from './commands';
import type { ServerCommand } from './launch';
import { keepLens } from './measure';
import { type ClientSideCommands, keepShownOnCancel, routeCommand } from './middleware';
import { answerConfiguration, wireSettings } from './workspaceSettings';

export const CLIENT_ID = 'torchward';

/** Python files on disk and unsaved, and the Python cells of notebooks. */
export const DOCUMENT_SELECTOR = [
  { scheme: 'file', language: 'python' },
  { scheme: 'untitled', language: 'python' },
  { notebook: '*', language: 'python' },
];

export function clientOptions(output: vscode.LogOutputChannel, commands?: ClientSideCommands): LanguageClientOptions {
  return {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: output,
    traceOutputChannel: output,
    revealOutputChannelOn: 4, // RevealOutputChannelOn.Never
    initializationOptions: wireSettings(),
    // hovers link "Explain TWxxx" to the torchward.explain command (a preview in the editor)
    markdown: { isTrusted: { enabledCommands: [SERVER_COMMANDS.explain, COMMANDS.pickGpu] } },
    middleware: {
      executeCommand: (command, args, next) => (commands ? routeCommand(command, args, commands, next) : next(command, args)),
      // Restricted Mode: the Measure lens (it runs the user's code) is not shown
      provideCodeLenses: async (document, token, next) => {
        const lenses = await next(document, token);
        const trusted = vscode.workspace.isTrusted;
        return lenses?.filter((lens) => keepLens(lens.command?.command, trusted));
      },
      // a pull cancelled by the next keystroke keeps the squiggles instead of blanking them
      provideDiagnostics: (document, previousResultId, token, next) =>
        keepShownOnCancel(document, previousResultId, token, next) as ReturnType<typeof next>,
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

export function createClient(command: ServerCommand, output: vscode.LogOutputChannel, commands?: ClientSideCommands): LanguageClient {
  const serverOptions: ServerOptions = {
    command: command.command,
    args: command.args,
    options: { env: command.env },
  };
  return new LanguageClient(CLIENT_ID, 'torchward', serverOptions, clientOptions(output, commands));
}
