/**
 * "Measure" asks first (src/measure.ts): off in Restricted Mode, an install action when
 * torch is missing, a modal consent once per workspace and interpreter naming what runs,
 * and failures answered in editor terms with an action.
 */
import { describe, expect, it } from 'vitest';

import { SERVER_COMMANDS } from '../../src/commands';
import {
  CHOOSE_FUNCTION,
  COPY_INSTALL,
  consentText,
  INSTALL_TORCH_COMMAND,
  installTorch,
  keepLens,
  MEASURE_COMMAND,
  measure,
  type MeasureUi,
  RUN_ACTION,
  topLevelFunctions,
  UNTRUSTED_MESSAGE,
} from '../../src/measure';
import { routeCommand } from '../../src/middleware';

const URI = 'file:///work/gpt/train.py';
const PYTHON = '/work/venv/bin/python';
// what the server answers (server/torch_probe.py) on a machine without an NVIDIA GPU
const INSTALL = `${PYTHON} -m pip install torch --index-url https://download.pytorch.org/whl/cpu`;
const NO_TORCH = { python: PYTHON, importable: false, command: INSTALL };

function fakeUi(overrides: Partial<MeasureUi> & { answers?: (string | undefined)[] } = {}) {
  const log: string[] = [];
  let consent: string[] = [];
  const answers = [...(overrides.answers ?? [])];
  const ui: MeasureUi = {
    isTrusted: () => true,
    interpreter: () => PYTHON,
    consented: () => consent,
    rememberConsent: async (list) => {
      consent = list;
    },
    torch: async (python) => {
      log.push(`torch? ${python}`);
      return { python, importable: true, command: INSTALL };
    },
    askModal: async (message, detail) => {
      log.push(`modal ${message} | ${detail}`);
      return answers.shift();
    },
    tell: async (kind, message, actions) => {
      log.push(`${kind} ${message} [${actions.join(', ')}]`);
      return answers.shift();
    },
    copy: async (text) => {
      log.push(`copy ${text}`);
    },
    functionsOf: async () => ['build_model', 'main'],
    pick: async (items) => {
      log.push(`pick ${items.join(',')}`);
      return answers.shift();
    },
    ...overrides,
  };
  const runs: unknown[][] = [];
  const run = async (args: unknown[]) => {
    runs.push(args);
    return { status: 'ok' };
  };
  return { ui, log, runs, run };
}

describe('Measure asks first', () => {
  it('is off in Restricted Mode, with a one-line explanation, and runs nothing', async () => {
    const { ui, log, runs, run } = fakeUi({ isTrusted: () => false });
    const answer = await measure(URI, {}, ui, run);
    expect(answer).toEqual({ uri: URI, status: 'untrusted' });
    expect(runs).toEqual([]);
    expect(log).toEqual([`info ${UNTRUSTED_MESSAGE} []`]);
    expect(UNTRUSTED_MESSAGE).not.toContain('\n');
    expect(keepLens(MEASURE_COMMAND, false)).toBe(false);
    expect(keepLens('torchward.selectGpu', false)).toBe(true);
    expect(keepLens(MEASURE_COMMAND, true)).toBe(true);
    expect(keepLens(INSTALL_TORCH_COMMAND, false)).toBe(false);
    expect(keepLens(INSTALL_TORCH_COMMAND, true)).toBe(true);
  });

  it("offers the server's install command instead of asking, when torch does not import", async () => {
    const { ui, log, runs, run } = fakeUi({ torch: async () => NO_TORCH, answers: [COPY_INSTALL] });
    const answer = await measure(URI, {}, ui, run);
    expect(answer).toMatchObject({ status: 'error', next: 'install-torch' });
    expect(runs).toEqual([]);
    expect(log.some((line) => line.startsWith('modal'))).toBe(false);
    expect(log).toContain(`warning torchward: Measure needs torch in ${PYTHON}. Install it with: ${INSTALL} [${COPY_INSTALL}]`);
    expect(log).toContain(`copy ${INSTALL}`);
  });

  it('runs when the interpreter cannot be asked: no judgement, the failure explains', async () => {
    const { ui, runs, run } = fakeUi({ torch: async (python) => ({ python, importable: null, command: '' }), answers: [RUN_ACTION] });
    await measure(URI, {}, ui, run);
    expect(runs).toHaveLength(1);
  });

  it('answers the install-torch lens with the command and a Copy button, or that Measure is back', async () => {
    const missing = fakeUi({ torch: async () => NO_TORCH, answers: [COPY_INSTALL] });
    expect(await installTorch(missing.ui)).toEqual(NO_TORCH);
    expect(missing.log).toContain(`copy ${INSTALL}`);
    expect(missing.runs).toEqual([]);
    const installed = fakeUi();
    await installTorch(installed.ui);
    expect(installed.log).toEqual([`torch? ${PYTHON}`, `info torchward: torch is installed in ${PYTHON}; "Measure with your model" is available. []`]);
    const untrusted = fakeUi({ isTrusted: () => false });
    expect(await installTorch(untrusted.ui)).toBeUndefined();
    expect(untrusted.log).toEqual([`info ${UNTRUSTED_MESSAGE} []`]);
  });

  it('is what the install-torch lens runs: the middleware routes torchward.installTorch to it', async () => {
    const calls: string[] = [];
    const handlers = {
      pickGpu: async () => undefined,
      explain: async () => undefined,
      whyNoJob: async () => undefined,
      installTorch: async () => calls.push('installTorch'),
    };
    await routeCommand(SERVER_COMMANDS.installTorch, [URI], handlers, (command) => calls.push(`server ${command}`));
    expect(calls).toEqual(['installTorch']);
    expect(SERVER_COMMANDS.installTorch).toBe(INSTALL_TORCH_COMMAND);
  });

  it('asks once per workspace and interpreter, naming the interpreter, the script and what runs', async () => {
    const { ui, log, runs, run } = fakeUi({ answers: [RUN_ACTION] });
    await measure(URI, {}, ui, run);
    const modal = log.filter((line) => line.startsWith('modal'));
    expect(modal).toHaveLength(1);
    expect(modal[0]).toContain(PYTHON);
    expect(modal[0]).toContain('/work/gpt/train.py');
    expect(modal[0]).toContain('torchward.profile.worker');
    expect(runs).toEqual([[URI, { interpreter: PYTHON, quiet: true }]]);
    await measure(URI, {}, ui, run);
    expect(log.filter((line) => line.startsWith('modal'))).toHaveLength(1);
    expect(runs).toHaveLength(2);
  });

  it('runs nothing when the consent is declined, and asks again next time', async () => {
    const { ui, log, runs, run } = fakeUi({ answers: [undefined, undefined] });
    expect(await measure(URI, {}, ui, run)).toEqual({ uri: URI, status: 'declined' });
    await measure(URI, {}, ui, run);
    expect(runs).toEqual([]);
    expect(log.filter((line) => line.startsWith('modal'))).toHaveLength(2);
  });

  it('answers "choose the function" with a pick of the script\'s functions and runs again with it', async () => {
    const { ui, log, runs } = fakeUi({ answers: [RUN_ACTION, CHOOSE_FUNCTION, 'build_model'] });
    const answers = [{ status: 'error', reason: 'train.py: no model construction found: choose the function that builds the model', next: 'choose-factory' }, { status: 'ok' }];
    const run = async (args: unknown[]) => {
      runs.push(args);
      return answers.shift();
    };
    const final = await measure(URI, {}, ui, run);
    expect(final).toEqual({ status: 'ok' });
    expect(runs[1]).toEqual([URI, { factory: 'build_model', interpreter: PYTHON, quiet: true }]);
    const warning = log.find((line) => line.startsWith('warning'));
    expect(warning).toContain(`[${CHOOSE_FUNCTION}]`);
    expect(warning).not.toContain('torchward profile');
  });

  it('is what the lens runs: the middleware routes torchward.measure through it', async () => {
    const calls: string[] = [];
    const handlers = {
      pickGpu: async () => undefined,
      explain: async () => undefined,
      whyNoJob: async () => undefined,
      measure: async (uri: string, options: Record<string, unknown>, run: (args: unknown[]) => Promise<unknown>) => {
        calls.push(`measure ${uri}`);
        return run([uri, { ...options, quiet: true }]);
      },
    };
    await routeCommand(SERVER_COMMANDS.measure, [URI], handlers, (command, args) => calls.push(`server ${command} ${JSON.stringify(args)}`));
    expect(calls).toEqual([`measure ${URI}`, `server torchward.measure ["${URI}",{"quiet":true}]`]);
    expect(SERVER_COMMANDS.measure).toBe(MEASURE_COMMAND);
  });

  it('finds the top-level functions of a script', () => {
    expect(topLevelFunctions('import torch\ndef build():\n    def inner():\n        pass\nasync def main(x):\n    pass\n')).toEqual(['build', 'main']);
    expect(consentText(URI, PYTHON).message).toContain('runs your code');
  });
});
