/**
 * "Measure with your model (runs your code)" asks first.
 *
 * The lens comes from the server (server/profiling.py) and runs `torchward.measure`,
 * which runs the user's script in a subprocess of the chosen interpreter. Before that
 * the extension:
 *
 * 1. refuses in a Restricted Mode (untrusted) workspace, with a one-line explanation
 *    (lint and estimate never run user code and stay on; the lens is also hidden there,
 *    see `keepLens`);
 * 2. asks the server whether torch imports in that interpreter (`torchward.installTorch`,
 *    server/torch_probe.py: the one place that decides, and that also replaces the
 *    server's Measure lens with "Measure needs torch — how to install it" where torch is
 *    missing); if not, no consent is asked and the user gets the server's install
 *    command (the CPU build on a machine without an NVIDIA GPU) with a Copy button
 *    instead of a run that fails;
 * 3. asks a modal consent once per workspace and interpreter, naming the interpreter, the
 *    script and what will run (stored in workspaceState);
 * 4. runs it with `quiet` (the server does not show its own toast) and answers a
 *    failure in editor terms with an action: "Choose Function…" runs again with the
 *    function that builds the model, "Copy Install Command" for torch.
 *
 * Everything that touches VS Code is injected (`MeasureUi`), so this module is plain logic.
 */

/** The server's command (server/profiling.py MEASURE). */
export const MEASURE_COMMAND = 'torchward.measure';
/** The server's lens where torch is missing, and its torch check (server/profiling.py INSTALL_TORCH). */
export const INSTALL_TORCH_COMMAND = 'torchward.installTorch';
/** workspaceState key: the interpreters this workspace agreed to run its code with. */
export const CONSENT_KEY = 'torchward.measureConsent';

export const UNTRUSTED_MESSAGE =
  'torchward: "Measure" runs your code, so it is off in Restricted Mode — trust this folder to use it (linting and estimates stay on).';

export interface MeasureUi {
  isTrusted(): boolean;
  /** The interpreter the measurement runs in (the server's), undefined when unknown. */
  interpreter(): string | undefined;
  consented(): string[];
  rememberConsent(interpreters: string[]): Promise<void>;
  /** The server's answer on torch in `python` (`torchward.installTorch`, quiet). */
  torch(python: string): Promise<TorchStatus>;
  /** A modal question; resolves to the chosen action or undefined. */
  askModal(message: string, detail: string, actions: string[]): Promise<string | undefined>;
  /** A toast with actions; resolves to the chosen action or undefined. */
  tell(kind: 'info' | 'warning' | 'error', message: string, actions: string[]): Promise<string | undefined>;
  copy(text: string): Promise<void>;
  /** The functions of the script, for "choose the function that builds the model". */
  functionsOf(uri: string): Promise<string[]>;
  pick(items: string[], placeHolder: string): Promise<string | undefined>;
}

export type Run = (args: unknown[]) => Promise<unknown>;

export const RUN_ACTION = 'Run';
export const COPY_INSTALL = 'Copy Install Command';
export const CHOOSE_FUNCTION = 'Choose Function…';

/** torch in one interpreter, as the server answers `torchward.installTorch` (server/torch_probe.py):
 * `importable` null when the interpreter could not be asked; `command` installs torch there. */
export interface TorchStatus {
  python: string;
  importable: boolean | null;
  command: string;
}

function basename(uri: string): string {
  const path = decodeURIComponent(uri.replace(/^file:\/\//, ''));
  return path.split(/[\\/]/).pop() || path;
}

/** The consent dialog's text: what will run, with what. */
export function consentText(uri: string, python: string): { message: string; detail: string } {
  const script = decodeURIComponent(uri.replace(/^file:\/\//, ''));
  return {
    message: `Measure runs your code: allow it in this workspace?`,
    detail:
      `Interpreter: ${python}\n` +
      `Script: ${script}\n\n` +
      `torchward starts "${python} -m torchward.profile.worker" in the script's folder. It imports ` +
      `${basename(uri)}'s modules, builds the model the way the script does, and runs one ` +
      'training step (forward, backward, optimizer step) on random inputs to measure the peak memory. ' +
      'Nothing else of the script runs. You can cancel it from the lens or the progress notification.',
  };
}

interface Answer {
  status?: string;
  reason?: string;
  next?: string;
}

/** Run `torchward.measure` for `uri` the way the user must agree to; returns the server's answer. */
export async function measure(uri: string, options: Record<string, unknown>, ui: MeasureUi, run: Run): Promise<unknown> {
  if (!ui.isTrusted()) {
    await ui.tell('info', UNTRUSTED_MESSAGE, []);
    return { uri, status: 'untrusted' };
  }
  const python = ui.interpreter();
  if (python === undefined) {
    await ui.tell('warning', 'torchward: Measure needs the server to run in a Python interpreter; it runs from a `torchward` executable here (setting torchward.path).', []);
    return { uri, status: 'error', reason: 'no interpreter' };
  }
  const torch = await ui.torch(python);
  if (torch.importable === false) {
    await offerInstall(torch, ui);
    return { uri, status: 'error', reason: 'torch is not installed', next: 'install-torch' };
  }
  const agreed = ui.consented();
  if (!agreed.includes(python)) {
    const text = consentText(uri, python);
    if ((await ui.askModal(text.message, text.detail, [RUN_ACTION])) !== RUN_ACTION) {
      return { uri, status: 'declined' };
    }
    await ui.rememberConsent([...agreed, python]);
  }
  const answer = (await run([uri, { ...options, interpreter: python, quiet: true }])) as Answer | undefined;
  if (answer?.status === 'error') {
    return (await explainFailure(uri, answer, python, options, ui, run)) ?? answer;
  }
  return answer;
}

async function offerInstall(torch: TorchStatus, ui: MeasureUi): Promise<void> {
  const choice = await ui.tell('warning', `torchward: Measure needs torch in ${torch.python}. Install it with: ${torch.command}`, [COPY_INSTALL]);
  if (choice === COPY_INSTALL) {
    await ui.copy(torch.command);
  }
}

/**
 * The server's lens "Measure needs torch in this interpreter — how to install it": the
 * install command with a Copy button, or — torch installed since — that Measure is
 * available (the server asks again and brings the Measure lens back).
 */
export async function installTorch(ui: MeasureUi): Promise<TorchStatus | undefined> {
  if (!ui.isTrusted()) {
    await ui.tell('info', UNTRUSTED_MESSAGE, []);
    return undefined;
  }
  const python = ui.interpreter();
  if (python === undefined) {
    return undefined;
  }
  const torch = await ui.torch(python);
  if (torch.importable === false) {
    await offerInstall(torch, ui);
  } else if (torch.importable) {
    await ui.tell('info', `torchward: torch is installed in ${torch.python}; "Measure with your model" is available.`, []);
  }
  return torch;
}

/** A failed run said in editor terms, with the action that fixes it; may run again. */
async function explainFailure(
  uri: string,
  answer: Answer,
  python: string,
  options: Record<string, unknown>,
  ui: MeasureUi,
  run: Run,
): Promise<unknown> {
  if (answer.next === 'install-torch') {
    await offerInstall(await ui.torch(python), ui);
    return undefined;
  }
  if (answer.next === 'choose-factory') {
    const choice = await ui.tell('warning', `torchward: cannot measure — ${answer.reason ?? 'no model found'}.`, [CHOOSE_FUNCTION]);
    if (choice !== CHOOSE_FUNCTION) {
      return undefined;
    }
    const functions = await ui.functionsOf(uri);
    if (functions.length === 0) {
      await ui.tell('info', `torchward: ${basename(uri)} has no top-level function that could build the model; add one that returns it.`, []);
      return undefined;
    }
    const factory = await ui.pick(functions, 'The function that builds and returns the model');
    if (factory === undefined) {
      return undefined;
    }
    return measure(uri, { ...options, factory }, ui, run);
  }
  await ui.tell('error', `torchward: measurement failed — ${answer.reason ?? 'no reason given'}.`, []);
  return undefined;
}

/** Top-level `def`s of a Python text (candidates for the model's factory). */
export function topLevelFunctions(text: string): string[] {
  return [...text.matchAll(/^(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(/gm)].map((match) => match[1]);
}

/** Whether a code lens from the server is shown: Measure lenses (and the install-torch lens
 * that stands in for one) only in a trusted workspace. */
export function keepLens(command: string | undefined, trusted: boolean): boolean {
  return trusted || (command !== MEASURE_COMMAND && command !== INSTALL_TORCH_COMMAND);
}
