import type { Command } from "commander";
import { addGenerationOptions, formatFlagErrors, toSamplingOptions, type ModelFlags, type SamplingFlags } from "../options.js";

/** Flags of `kiln run`, as commander parses them. */
export interface RunFlags extends ModelFlags, SamplingFlags {
  system?: string;
  maxTokens?: number;
  stop?: string[];
  json?: boolean;
}

/** Generated tokens when `--max-tokens` is not given. */
const DEFAULT_MAX_TOKENS = 512;

/** Registers `kiln run`: one prompt in (arguments and/or piped stdin), the streamed reply out. */
export function registerRun(program: Command): void {
  const command = program
    .command("run")
    .description("generate a reply to one prompt and stream it to stdout (the prompt may also be piped on stdin)")
    .argument("[prompt...]", "the prompt; piped stdin is appended after a blank line");
  addGenerationOptions(command, DEFAULT_MAX_TOKENS);
  command
    .option("--json", "print the engine's events as NDJSON, one per line, ending with finish and usage")
    .addHelpText("after", '\nExamples:\n  kiln run "Write a haiku about kilns"\n  cat notes.txt | kiln run "Summarise:"\n')
    .action(async (words: string[], flags: RunFlags) => {
      // Heavy modules (engine, native addon) load only here, so `kiln --help` stays fast.
      const { runPrompt } = await import("../run-prompt.js");
      process.exitCode = await runPrompt(words, flags, { sampling: toSamplingOptions(flags), maxTokens: flags.maxTokens ?? DEFAULT_MAX_TOKENS });
    });
  formatFlagErrors(command);
}
