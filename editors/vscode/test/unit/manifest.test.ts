/**
 * The manifest's Restricted Mode contract (package.json, no build needed): the extension
 * runs in an untrusted folder with limited support — lint and estimate on, Measure off —
 * and the settings that choose the program to run are restricted to user-level values.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

import { describe, expect, it } from 'vitest';

import { COMMANDS } from '../../src/commands';

const manifest = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));

describe('Restricted Mode in the manifest', () => {
  it('declares limited support, with a description and the restricted settings', () => {
    const untrusted = manifest.capabilities?.untrustedWorkspaces;
    expect(untrusted?.supported).toBe('limited');
    expect(untrusted.description).toMatch(/Measure/);
    const declared = Object.keys(manifest.contributes.configuration.properties);
    for (const key of ['torchward.path', 'torchward.interpreter', 'torchward.importStrategy']) {
      expect(untrusted.restrictedConfigurations).toContain(key);
      expect(declared).toContain(key);
    }
    // lint settings stay usable from the workspace in Restricted Mode
    expect(untrusted.restrictedConfigurations).not.toContain('torchward.select');
  });

  it('hides and disables Measure in an untrusted workspace', () => {
    const command = manifest.contributes.commands.find((c: { command: string }) => c.command === COMMANDS.measureActive);
    expect(command?.enablement).toContain('isWorkspaceTrusted');
    const menu = manifest.contributes.menus.commandPalette.find((m: { command: string }) => m.command === COMMANDS.measureActive);
    expect(menu?.when).toContain('isWorkspaceTrusted');
    // nothing else depends on trust: lint, fixes and the GPU picker work untrusted
    const others = manifest.contributes.menus.commandPalette.filter((m: { command: string }) => m.command !== COMMANDS.measureActive);
    expect(others.every((m: { when?: string }) => !(m.when ?? '').includes('isWorkspaceTrusted'))).toBe(true);
  });

  it('offers Plan This Job on Python files, trusted or not (it runs no user code)', () => {
    const command = manifest.contributes.commands.find((c: { command: string }) => c.command === COMMANDS.planActive);
    expect(command?.title).toMatch(/Plan/);
    expect(command?.enablement ?? '').not.toContain('isWorkspaceTrusted');
    const menu = manifest.contributes.menus.commandPalette.find((m: { command: string }) => m.command === COMMANDS.planActive);
    expect(menu?.when).toBe('editorLangId == python');
  });
});
