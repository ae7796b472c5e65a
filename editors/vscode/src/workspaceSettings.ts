/** The `torchward` section as VS Code holds it, mapped to the wire (settings.ts) per scope. */
import * as vscode from 'vscode';

import { clientSettings, type ClientSettings, toWire, type WireSettings } from './settings';

export const SECTION = 'torchward';

export function wireSettings(scope?: vscode.ConfigurationScope | null): WireSettings {
  const configuration = vscode.workspace.getConfiguration(SECTION, scope);
  return toWire((key) => configuration.get(key));
}

export function currentClientSettings(): ClientSettings {
  const configuration = vscode.workspace.getConfiguration(SECTION);
  return clientSettings((key) => configuration.get(key));
}

/** Answers `workspace/configuration`: the wire mapping for `torchward` items, null for other sections. */
export function answerConfiguration(params: { items: Array<{ section?: string; scopeUri?: string }> }): unknown[] {
  return params.items.map((item) =>
    item.section === SECTION ? wireSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined) : null,
  );
}
