/**
 * The one place that prints an error and picks the exit code: one line (plus a hint) on stderr, the stack only
 * with --debug. Exit codes: 1 usage or input error, 2 model/engine failure.
 */
import { EngineError } from "../engine/index.js";

/** An error in what the user typed: exit code 1. */
export class UsageError extends Error {
  constructor(message: string, readonly hint?: string) {
    super(message);
    this.name = "UsageError";
  }
}

const INPUT_CODES = new Set(["invalid_request", "not_found", "context_overflow", "authentication", "permission"]);

/** Exit code for an error: 1 for bad input, 2 for model or engine failures. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof UsageError) return 1;
  if (error instanceof EngineError && INPUT_CODES.has(error.code)) return 1;
  return 2;
}

/** Prints `kiln: <message>` and an optional hint; returns the exit code. */
export function reportError(error: unknown, options: { debug?: boolean } = {}): number {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`kiln: ${message}\n`);
  const hint = error instanceof UsageError ? error.hint : undefined;
  if (hint) process.stderr.write(`hint: ${hint}\n`);
  if (options.debug && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  return exitCodeOf(error);
}
