/**
 * The extension's settings: declared once in package.json, read here, and mapped to the
 * server's wire shape (server/configuration.py, `WIRE_NAMES`) in this one place.
 *
 * Two kinds of keys share the `torchward` section. Server keys travel to the server
 * unchanged (camelCase on both sides) as `initializationOptions`, in answers to
 * `workspace/configuration` and after every change. Client keys (how to find and start
 * the server, logging) stay here; the server would ignore them anyway.
 */

import { readFileSync } from 'node:fs';
import * as path from 'node:path';

/** Keys only the extension reads (how to find and start the server, logging). */
export const CLIENT_KEYS = ['path', 'interpreter', 'importStrategy', 'logLevel', 'trace.server'] as const;

interface Manifest {
  contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
}

/** package.json, where every setting is declared (out/ and src/ both sit one level below it). */
export function manifest(): Manifest {
  return JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as Manifest;
}

/** Every `torchward.*` setting key, without the prefix, as package.json declares them. */
export function declaredKeys(declared: Manifest = manifest()): string[] {
  return Object.keys(declared.contributes.configuration.properties).map((key) => key.replace(/^torchward\./, ''));
}

/** Keys the server reads: every declared key that is not a client key. */
export const SERVER_KEYS: readonly string[] = declaredKeys().filter((key) => !(CLIENT_KEYS as readonly string[]).includes(key));

/** Client keys whose change needs a new server process. */
export const RESTART_KEYS = ['path', 'interpreter', 'importStrategy', 'logLevel'] as const;

export type WireSettings = Record<string, unknown>;
export type ImportStrategy = 'fromEnvironment' | 'useBundled';
export type LogLevel = 'error' | 'warning' | 'info' | 'debug';

export interface ClientSettings {
  /** `torchward` executables to try, first that exists wins. */
  path: string[];
  /** Python interpreters to run the server with (`-m torchward lsp`). */
  interpreter: string[];
  importStrategy: ImportStrategy;
  logLevel: LogLevel;
}

/** What `vscode.WorkspaceConfiguration.get` offers; a plain function keeps this module vscode-free. */
export type SettingGetter = (key: string) => unknown;

/** The server's settings as they go on the wire; unset keys are left out (the server's defaults hold). */
export function toWire(get: SettingGetter): WireSettings {
  const wire: WireSettings = {};
  for (const key of SERVER_KEYS) {
    const value = get(key);
    if (value !== undefined) {
      wire[key] = value;
    }
  }
  return wire;
}

function stringList(value: unknown): string[] {
  if (typeof value === 'string') {
    return value.trim() ? [value.trim()] : [];
  }
  if (Array.isArray(value)) {
    return value.filter((item): item is string => typeof item === 'string' && item.trim() !== '').map((item) => item.trim());
  }
  return [];
}

export function clientSettings(get: SettingGetter): ClientSettings {
  const strategy = get('importStrategy');
  const level = get('logLevel');
  return {
    path: stringList(get('path')),
    interpreter: stringList(get('interpreter')),
    importStrategy: strategy === 'useBundled' ? 'useBundled' : 'fromEnvironment',
    logLevel: level === 'error' || level === 'info' || level === 'debug' ? level : 'warning',
  };
}

/** `torchward lsp` verbosity flags for a log level (the server logs to stderr → the output channel). */
export function verbosityFlags(level: LogLevel): string[] {
  switch (level) {
    case 'info':
      return ['-v'];
    case 'debug':
      return ['-vv'];
    default:
      return [];
  }
}

/** Whether a configuration change needs a restart (`affects` is `event.affectsConfiguration`). */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_KEYS.some((key) => affects(`torchward.${key}`));
}
