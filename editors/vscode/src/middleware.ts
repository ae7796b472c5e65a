/**
 * Server commands the extension answers itself, as a VS Code user expects, instead of
 * sending them to the server (vscode-languageclient's `middleware.executeCommand`):
 *
 * - `torchward.selectGpu` without a GPU name (the code lens "Peak ≈ … · fits"): the GPU
 *   quick pick; with a name it goes to the server;
 * - `torchward.explain TWxxx` ("Explain" quick fix, hover link): the rule's documentation
 *   in a Markdown preview, fetched with `torchward/ruleDocumentation` — never a web page
 *   that may not exist;
 * - `torchward.whyNoJob URI` (the "no job found — Why?" lens and status item): the reason
 *   and the next step in a message, with a button to open pyproject.toml;
 * - `torchward.measure URI` (the "Measure … (runs your code)" lens): asks first
 *   (./measure.ts), then sends it to the server;
 * - `torchward.installTorch URI` (the lens that stands in for Measure where torch is
 *   missing): the server's install command with a Copy button (./measure.ts).
 *
 * Pure routing: the handlers are the extension's; tests give their own.
 */
import { SERVER_COMMANDS } from './commands';

export interface ClientSideCommands {
  pickGpu(): Promise<unknown>;
  explain(code: string): Promise<unknown>;
  whyNoJob(uri: string | undefined): Promise<unknown>;
  /** Consent, trust and torch checks before the server runs the user's code. */
  measure?(uri: string, options: Record<string, unknown>, run: (args: unknown[]) => Promise<unknown>): Promise<unknown>;
  /** How to install torch where Measure needs it. */
  installTorch?(): Promise<unknown>;
}

export type Next = (command: string, args: unknown[]) => unknown;

export function routeCommand(command: string, args: unknown[] | undefined, handlers: ClientSideCommands, next: Next): unknown {
  const first = args?.[0];
  if (command === SERVER_COMMANDS.selectGpu && (typeof first !== 'string' || first.trim() === '')) {
    return handlers.pickGpu();
  }
  if (command === SERVER_COMMANDS.explain && typeof first === 'string' && first !== '') {
    return handlers.explain(first);
  }
  if (command === SERVER_COMMANDS.whyNoJob) {
    return handlers.whyNoJob(typeof first === 'string' ? first : undefined);
  }
  if (command === SERVER_COMMANDS.measure && handlers.measure && typeof first === 'string') {
    const second = args?.[1];
    const options = second !== null && typeof second === 'object' ? (second as Record<string, unknown>) : {};
    return handlers.measure(first, options, async (runArgs) => next(command, runArgs));
  }
  if (command === SERVER_COMMANDS.installTorch && handlers.installTorch) {
    return handlers.installTorch();
  }
  return next(command, args ?? []);
}

/** What vscode-languageclient's pull provider answers (its `vsdiag` report kinds). */
export type PulledReport = { kind: 'full'; resultId?: string; items: unknown[] } | { kind: 'unChanged'; resultId: string };

/**
 * A pull cancelled by the next keystroke is answered "unchanged" (what the client already
 * shows) instead of the empty report vscode-languageclient 9 substitutes for it — which
 * blanked every squiggle of the document until typing stopped (issue 11). The client
 * pulls again right after (the cancelled pull is rescheduled), so nothing stays stale.
 */
export async function keepShownOnCancel<Document, Token extends { isCancellationRequested: boolean }>(
  document: Document,
  previousResultId: string | undefined,
  token: Token,
  next: (document: Document, previousResultId: string | undefined, token: Token) => unknown,
): Promise<unknown> {
  const report = await next(document, previousResultId, token);
  if (token.isCancellationRequested && previousResultId !== undefined) {
    return { kind: 'unChanged', resultId: previousResultId } satisfies PulledReport;
  }
  return report;
}
