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
  installCommand,
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
    torchImportable: async () => true,
    hasNvidiaGpu: async () => false,
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
  });

  it('offers the CPU install command instead of asking, when torch does not import', async () => {
    const { ui, log, runs, run } = fakeUi({ torchImportable: async () => false, answers: [COPY_INSTALL] });
    await measure(URI, {}, ui, run);
    expect(runs).toEqual([]);
    expect(log.some((line) => line.startsWith('modal'))).toBe(false);
    const command = installCommand(PYTHON, false);
    expect(command).toContain('download.pytorch.org/whl/cpu');
    expect(log).toContain(`copy ${command}`);
    expect(installCommand(PYTHON, true)).not.toContain('/cpu');
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
