import { Option, type Command } from "commander";
import { addGenerationOptions, formatFlagErrors, toSamplingOptions, type ModelFlags, type SamplingFlags } from "../options.js";

/** Flags of `kiln chat`, as commander parses them. */
export interface ChatFlags extends ModelFlags, SamplingFlags {
  system?: string;
  maxTokens?: number;
  stop?: string[];
  load?: string;
  url?: string;
  apiKey?: string;
  api: "anthropic" | "openai";
}

/** Tokens per reply when `--max-tokens` is not given. */
const DEFAULT_MAX_TOKENS = 1024;

/** Registers `kiln chat`: the terminal chat, on a local model or on a server (`--url`). */
export function registerChat(program: Command): void {
  const command = program
    .command("chat")
    .description("chat with a model in the terminal (a local model, or a running server with --url)");
  addGenerationOptions(command, DEFAULT_MAX_TOKENS);
  command
    .option("--load <file>", "continue a conversation saved with /save")
    .option("--url <base>", "chat with a running kiln serve or any compatible server at this address")
    .option("--api-key <key>", "API key for --url (default: $KILN_API_KEY)")
    .addOption(new Option("--api <protocol>", "protocol to speak with --url").choices(["anthropic", "openai"]).default("anthropic"))
    .addHelpText("after", "\nExamples:\n  kiln chat\n  kiln chat --model ./my-model.gguf --system \"Answer briefly\"\n  kiln chat --url http://127.0.0.1:8080 --api openai\n")
    .action(async (flags: ChatFlags) => {
      // Ink draws only the final frame when it thinks it runs in CI (CI or CONTINUOUS_INTEGRATION set), which
      // would leave a real terminal blank for the whole chat. It reads those variables once, when it is imported.
      if (process.stdout.isTTY) for (const name of ["CI", "CONTINUOUS_INTEGRATION"]) delete process.env[name];
      // Ink, React and the engine load only here, so other commands stay fast.
      const { startChat } = await import("../start-chat.js");
      process.exitCode = await startChat(flags, { sampling: toSamplingOptions(flags), maxTokens: flags.maxTokens ?? DEFAULT_MAX_TOKENS });
    });
  formatFlagErrors(command);
}
