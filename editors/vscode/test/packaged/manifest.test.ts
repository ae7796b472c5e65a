/**
 * The packaged .vsix: it carries the bundled server, and its manifest (activation events,
 * commands, menus, settings) is consistent with itself, with the code and with the
 * server's settings schema (server/configuration.py, read from the bundled copy).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

import { beforeAll, describe, expect, it } from 'vitest';

import { COMMANDS, SERVER_COMMANDS } from '../../src/commands';
import { bundledPath } from '../../src/launch';
import { CLIENT_KEYS, SERVER_KEYS } from '../../src/settings';
import { EXTENSION_DIR, unpackedExtension, vsixEntries } from './vsix';

interface Property {
  type?: string | string[];
  default?: unknown;
  scope?: string;
  description?: string;
  markdownDescription?: string;
  enum?: unknown[];
}

let root: string;
let entries: string[];
let manifest: any;

/** The server's schema, from the Python code inside the .vsix. */
function serverSchema(): { keys: string[]; defaults: Record<string, unknown>; errors: string[]; minor: number } {
  const script = [
    'import json, sys',
    'from torchward.server.configuration import WIRE_NAMES, ServerSettings, settings_from_wire, settings_to_wire',
    'declared = json.loads(sys.argv[1])',
    '_, errors = settings_from_wire(declared)',
    'print(json.dumps({"keys": list(WIRE_NAMES), "defaults": settings_to_wire(ServerSettings()), "errors": errors, "minor": sys.version_info[1]}))',
  ].join('\n');
  const defaults = Object.fromEntries(SERVER_KEYS.map((key) => [key, manifest.contributes.configuration.properties[`torchward.${key}`].default]));
  const version = execFileSync('python3', ['-c', 'import sys; print(sys.version_info[0], sys.version_info[1])']).toString().trim().split(' ').map(Number);
  const env = { ...process.env, PYTHONPATH: bundledPath(root, [version[0], version[1]]).join(path.delimiter), PYTHONNOUSERSITE: '1' };
  return JSON.parse(execFileSync('python3', ['-c', script, JSON.stringify(defaults)], { env, cwd: '/' }).toString());
}

beforeAll(() => {
  root = unpackedExtension();
  entries = vsixEntries();
  manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
});

describe('the packaged .vsix', () => {
  it('contains the compiled extension, its runtime dependencies and the bundled server', () => {
    for (const entry of [
      'extension/out/extension.js',
      'extension/node_modules/vscode-languageclient/package.json',
      'extension/bundled/manifest.json',
      'extension/bundled/libs/torchward/__main__.py',
      'extension/bundled/libs/torchward/server/server.py',
      'extension/bundled/libs/torchward/estimator/data/gpus.json',
      'extension/bundled/libs/pygls/__init__.py',
      'extension/bundled/libs/lsprotocol/types.py',
      'extension/readme.md',
      'extension/LICENSE.txt',
    ]) {
      expect(entries, entry).toContain(entry);
    }
  });

  it('carries compiled dependencies (libcst, for the fixes) for every Python it was bundled for', () => {
    const bundle = JSON.parse(readFileSync(path.join(root, 'bundled', 'manifest.json'), 'utf8'));
    expect(Object.keys(bundle.native).length).toBeGreaterThan(0);
    for (const tag of Object.keys(bundle.native)) {
      expect(bundle.native[tag]).toHaveProperty('libcst');
      expect(entries.some((entry) => entry.startsWith(`extension/bundled/native/${tag}/libcst/`))).toBe(true);
    }
    expect(bundle.libs.torchward).toBe(bundle.torchward);
  });

  it('leaves sources, tests, build scripts and dev dependencies out', () => {
    const leaked = entries.filter((entry) =>
      /^extension\/(src|test|scripts|\.cache)\//.test(entry) ||
      /^extension\/node_modules\/(vitest|typescript|@vscode\/vsce|vscode-languageserver-protocol\/node_modules)\//.test(entry) ||
      /\/__pycache__\//.test(entry),
    );
    expect(leaked).toEqual([]);
  });

  it('packs the manifest of this source tree', () => {
    const source = JSON.parse(readFileSync(path.join(EXTENSION_DIR, 'package.json'), 'utf8'));
    expect(manifest.contributes).toEqual(source.contributes);
    expect(manifest.activationEvents).toEqual(source.activationEvents);
    expect(manifest.main).toBe(source.main);
  });
});

describe('the manifest', () => {
  it('activates for Python files and Jupyter notebooks, and its main module exists', () => {
    expect(manifest.activationEvents).toEqual(expect.arrayContaining(['onLanguage:python', 'onNotebook:jupyter-notebook']));
    expect(entries).toContain(`extension/${manifest.main.replace(/^\.\//, '')}`);
  });

  it('declares exactly the commands the extension registers, none that the server registers', () => {
    const declared = manifest.contributes.commands.map((command: { command: string }) => command.command).sort();
    expect(declared).toEqual(Object.values(COMMANDS).sort());
    for (const serverCommand of Object.values(SERVER_COMMANDS)) {
      expect(declared).not.toContain(serverCommand); // vscode-languageclient registers those itself
    }
    for (const command of manifest.contributes.commands) {
      expect(command.title, command.command).toBeTruthy();
      expect(command.category).toBe('torchward');
    }
    const source = readFileSync(path.join(EXTENSION_DIR, 'src', 'extension.ts'), 'utf8');
    for (const key of Object.keys(COMMANDS)) {
      expect(source, `registerCommand(COMMANDS.${key})`).toContain(`registerCommand(COMMANDS.${key},`);
    }
  });

  it('menus refer only to declared commands', () => {
    const declared = new Set(manifest.contributes.commands.map((command: { command: string }) => command.command));
    for (const items of Object.values(manifest.contributes.menus) as Array<Array<{ command: string }>>) {
      for (const item of items) {
        expect(declared.has(item.command), item.command).toBe(true);
      }
    }
  });

  it('declares every setting once, under torchward., with a type, a default, a scope and a description', () => {
    const properties: Record<string, Property> = manifest.contributes.configuration.properties;
    for (const [key, property] of Object.entries(properties)) {
      expect(key.startsWith('torchward.'), key).toBe(true);
      expect(property.type, key).toBeDefined();
      expect('default' in property, key).toBe(true);
      expect(['resource', 'window', 'machine-overridable', 'machine', 'application'], key).toContain(property.scope);
      expect(property.markdownDescription ?? property.description, key).toBeTruthy();
      if (property.enum) {
        expect(property.enum, key).toContain(property.default);
      }
    }
    for (const key of CLIENT_KEYS) {
      expect(properties, key).toHaveProperty([`torchward.${key}`]);
    }
  });

  it("declares exactly the server's settings, with the server's defaults, as valid values (server/configuration.py)", () => {
    const schema = serverSchema();
    expect([...SERVER_KEYS].sort()).toEqual([...schema.keys].sort());
    const declaredDefaults = Object.fromEntries(SERVER_KEYS.map((key) => [key, manifest.contributes.configuration.properties[`torchward.${key}`].default]));
    expect(declaredDefaults).toEqual(schema.defaults);
    expect(schema.errors).toEqual([]);
  });

  it('gives folder-level (resource) scope to every server setting, so multi-root workspaces can differ', () => {
    for (const key of SERVER_KEYS) {
      expect(manifest.contributes.configuration.properties[`torchward.${key}`].scope, key).toBe('resource');
    }
  });
});
