/**
 * Issue 11 in the extension's own code: the code lens's argument-less selectGpu opens the
 * picker, "Explain" and "no job found — Why?" are answered inside the editor, the status
 * bar shows "no job found", and the picker marks the GPU pyproject's target-gpu names.
 */
import { beforeEach, describe, expect, it } from 'vitest';

import { SERVER_COMMANDS } from '../../src/commands';
import { renderFit } from '../../src/gpufit';
import { gpuItems, namesGpu } from '../../src/gpus';
import { type ClientSideCommands, keepShownOnCancel, routeCommand } from '../../src/middleware';
import { GpuFitStatus } from '../../src/statusbar';
import { mock } from '../vscode-mock';

const URI = 'file:///work/gpt/train.py';
const NO_JOB = {
  uri: URI,
  status: 'no-job',
  gpu: 'A100 80GB',
  reason: 'this script trains something (it has a training loop), but torchward cannot tell which model',
  hint: 'name the model in pyproject.toml: `model = "gpt2"` under `[tool.torchward.estimate]`',
};

function recorder() {
  const calls: string[] = [];
  const handlers: ClientSideCommands = {
    pickGpu: async () => calls.push('pickGpu'),
    explain: async (code) => calls.push(`explain ${code}`),
    whyNoJob: async (uri) => calls.push(`whyNoJob ${uri}`),
  };
  const next = (command: string, args: unknown[]) => calls.push(`server ${command} ${JSON.stringify(args)}`);
  return { calls, handlers, next };
}

describe('server commands the extension answers itself', () => {
  it('opens the GPU picker for the code lens, which sends selectGpu without a name', async () => {
    const { calls, handlers, next } = recorder();
    await routeCommand(SERVER_COMMANDS.selectGpu, [], handlers, next);
    await routeCommand(SERVER_COMMANDS.selectGpu, undefined, handlers, next);
    await routeCommand(SERVER_COMMANDS.selectGpu, ['  '], handlers, next);
    expect(calls).toEqual(['pickGpu', 'pickGpu', 'pickGpu']);
  });

  it('sends selectGpu with a name to the server', async () => {
    const { calls, handlers, next } = recorder();
    await routeCommand(SERVER_COMMANDS.selectGpu, ['H100 80GB'], handlers, next);
    expect(calls).toEqual(['server torchward.selectGpu ["H100 80GB"]']);
  });

  it('shows the rule documentation in the editor for Explain, and the reason for Why?', async () => {
    const { calls, handlers, next } = recorder();
    await routeCommand(SERVER_COMMANDS.explain, ['TW001'], handlers, next);
    await routeCommand(SERVER_COMMANDS.whyNoJob, [URI], handlers, next);
    await routeCommand('torchward.measure', [URI], handlers, next);
    expect(calls).toEqual([`explain TW001`, `whyNoJob ${URI}`, `server torchward.measure ["${URI}"]`]);
  });
});

describe('no job found', () => {
  beforeEach(() => mock.reset());

  it('is a visible status item that says why when hovered and asks the server why when clicked', () => {
    const view = renderFit(NO_JOB);
    expect(view).toMatchObject({ visible: true, text: '$(question) torchward: no job found — Why?', tone: 'warning' });
    expect(view.tooltip).toContain('cannot tell which model');
    expect(view.tooltip).toContain('**Next step:** name the model in pyproject.toml');

    const status = new GpuFitStatus();
    mock.setActiveDocument(URI);
    status.update(NO_JOB);
    const item = mock.statusBarItems[0];
    expect(item.visible).toBe(true);
    expect(item.command).toEqual({ title: 'Why?', command: 'torchward.whyNoJob', arguments: [URI] });
  });

});

describe('no training job (a Python file without a training run)', () => {
  beforeEach(() => mock.reset());
  const MODULE = 'file:///work/gpt/data.py';
  const NONE = {
    uri: MODULE,
    status: 'none',
    gpu: 'A100 80GB',
    reason: 'this file does not use PyTorch',
    hint: 'nothing to do here: torchward checks PyTorch training code and estimates its GPU memory; open a training script to see it',
  };

  it('is a neutral status item whose tooltip says why and what to do', () => {
    const view = renderFit(NONE);
    expect(view).toMatchObject({ visible: true, text: '$(circle-slash) torchward: no training job', tone: 'normal' });
    expect(view.tooltip).toContain('**torchward: no training job**\n\nthis file does not use PyTorch.');
    expect(view.tooltip).toContain('**Next step:** nothing to do here');
  });

  it('explains itself when clicked, instead of opening the GPU picker', () => {
    const status = new GpuFitStatus();
    mock.setActiveDocument(MODULE);
    status.update(NONE);
    const item = mock.statusBarItems[0];
    expect(item.visible).toBe(true);
    expect(item.backgroundColor).toBeUndefined();
    expect(item.command).toEqual({ title: 'Why?', command: 'torchward.whyNoJob', arguments: [MODULE] });
  });

  it('follows the active editor: a training script shows its fit again', () => {
    const status = new GpuFitStatus();
    status.update(NONE);
    status.update({ uri: URI, status: 'ok', gpu: 'NVIDIA A100 80GB SXM4', peak: 10 * 1024 ** 3, percent: 13, verdict: 'fits' });
    mock.setActiveDocument(URI);
    status.refresh();
    expect(mock.statusBarItems[0].text).toBe('✓ A100 80GB SXM4 · 13%');
    mock.setActiveDocument(MODULE);
    status.refresh();
    expect(mock.statusBarItems[0].text).toBe('$(circle-slash) torchward: no training job');
  });
});

describe('the GPU picker marks the GPU in use', () => {
  const catalog = {
    gpus: [
      { key: 'a100-80gb', name: 'NVIDIA A100 80GB SXM4', aliases: ['a100 80gb', 'a100-sxm4-80gb'] },
      { key: 'a100-80gb-pcie', name: 'NVIDIA A100 80GB PCIe', aliases: ['a100 80gb pcie'] },
    ],
  };

  it('when pyproject or a setting names it the way a user types it', () => {
    const marked = gpuItems(catalog, 'A100 80GB').filter((item) => item.description?.endsWith('(current)'));
    expect(marked.map((item) => item.value)).toEqual(['a100-80gb']);
    expect(namesGpu('a100-80gb', catalog.gpus[0])).toBe(true);
    expect(namesGpu('NVIDIA A100 80GB PCIe', catalog.gpus[0])).toBe(false);
  });

  it("when the server's fit names it by its catalog name", () => {
    const marked = gpuItems(catalog, 'NVIDIA A100 80GB PCIe').filter((item) => item.description?.endsWith('(current)'));
    expect(marked.map((item) => item.value)).toEqual(['a100-80gb-pcie']);
  });

  it('from the last fit when no editor is active', () => {
    const status = new GpuFitStatus();
    status.update({ uri: URI, status: 'ok', gpu: 'NVIDIA A100 80GB SXM4', peak: 1, percent: 1, verdict: 'fits' });
    expect(status.lastGpu()).toBe('NVIDIA A100 80GB SXM4');
  });
});

describe('a pull cancelled by the next keystroke', () => {
  const empty = { kind: 'full', items: [] }; // what vscode-languageclient substitutes for a cancelled pull
  const shown = { kind: 'full', resultId: '7.12', items: ['TW001'] };

  it('keeps what the editor shows instead of blanking it', async () => {
    const token = { isCancellationRequested: false };
    const report = await keepShownOnCancel('doc', '7.11', token, async () => {
      token.isCancellationRequested = true; // the next key arrived while the pull was out
      return empty;
    });
    expect(report).toEqual({ kind: 'unChanged', resultId: '7.11' });
  });

  it('passes an answered pull through, and a first pull has nothing to keep', async () => {
    expect(await keepShownOnCancel('doc', '7.11', { isCancellationRequested: false }, async () => shown)).toBe(shown);
    expect(await keepShownOnCancel('doc', undefined, { isCancellationRequested: true }, async () => empty)).toBe(empty);
  });
});
