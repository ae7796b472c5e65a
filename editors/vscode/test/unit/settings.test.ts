import { readFileSync } from 'node:fs';
import * as path from 'node:path';

import { beforeEach, describe, expect, it } from 'vitest';

import { mock } from '../vscode-mock';
import { CLIENT_KEYS, clientSettings, declaredKeys, needsRestart, SERVER_KEYS, toWire, verbosityFlags } from '../../src/settings';
import { answerConfiguration, wireSettings } from '../../src/workspaceSettings';

const packageJson = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
const properties: Record<string, { default?: unknown }> = packageJson.contributes.configuration.properties;

function configure(scope: string, values: Record<string, unknown>): void {
  mock.configuration.set(scope, new Map(Object.entries(values)));
}

/** What VS Code answers when nothing is set: the defaults package.json declares. */
function declaredDefaults(): void {
  configure('', Object.fromEntries(Object.entries(properties).map(([key, spec]) => [key, spec.default])));
}

describe('settings mapping', () => {
  beforeEach(() => mock.reset());

  it('server keys are every declared key that is not a client key', () => {
    expect([...SERVER_KEYS].sort()).toEqual(declaredKeys().filter((key) => !(CLIENT_KEYS as readonly string[]).includes(key)).sort());
    expect(SERVER_KEYS).toContain('targetGpu');
    expect(SERVER_KEYS).not.toContain('interpreter');
  });

  it('sends the declared defaults as camelCase wire keys, and no client key', () => {
    declaredDefaults();
    expect(wireSettings()).toEqual({
      targetGpu: null,
      select: null,
      ignore: [],
      severity: {},
      debounceMs: 150,
      estimator: true,
      inlayHints: true,
      codeLens: true,
      workspaceScan: 'off',
      largeFileLines: 60000,
      useCache: 'auto',
    });
  });

  it('leaves out keys that are not set at all, so the server keeps its defaults', () => {
    expect(toWire((key) => (key === 'ignore' ? ['TW012'] : undefined))).toEqual({ ignore: ['TW012'] });
  });

  it('answers workspace/configuration per folder, and null for other sections', () => {
    declaredDefaults();
    configure('file:///work/a', { 'torchward.targetGpu': 'H100 80GB', 'torchward.select': ['TW001'] });
    const answers = answerConfiguration({
      items: [{ section: 'torchward' }, { section: 'torchward', scopeUri: 'file:///work/a' }, { section: 'python' }],
    });
    expect(answers[0]).toMatchObject({ targetGpu: null, select: null });
    expect(answers[1]).toMatchObject({ targetGpu: 'H100 80GB', select: ['TW001'], debounceMs: 150 });
    expect(answers[2]).toBeNull();
  });

  it('reads client settings with defaults for missing or malformed values', () => {
    expect(clientSettings(() => undefined)).toEqual({ path: [], interpreter: [], importStrategy: 'fromEnvironment', logLevel: 'warning' });
    const values: Record<string, unknown> = { path: '/opt/torchward', interpreter: ['  /usr/bin/python3 ', 3, ''], importStrategy: 'useBundled', logLevel: 'loud' };
    expect(clientSettings((key) => values[key])).toEqual({
      path: ['/opt/torchward'],
      interpreter: ['/usr/bin/python3'],
      importStrategy: 'useBundled',
      logLevel: 'warning',
    });
  });

  it('maps the log level to the server verbosity flags', () => {
    expect(verbosityFlags('warning')).toEqual([]);
    expect(verbosityFlags('error')).toEqual([]);
    expect(verbosityFlags('info')).toEqual(['-v']);
    expect(verbosityFlags('debug')).toEqual(['-vv']);
  });

  it('restarts the server only for the keys that change how it is started', () => {
    expect(needsRestart((section) => section === 'torchward.interpreter')).toBe(true);
    expect(needsRestart((section) => section === 'torchward.logLevel')).toBe(true);
    expect(needsRestart((section) => section === 'torchward.targetGpu')).toBe(false);
    expect(needsRestart((section) => section === 'torchward.trace.server')).toBe(false);
  });
});
