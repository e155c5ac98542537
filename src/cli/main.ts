/**
 * The composition root: builds the commander program. Command files register their flags and import their
 * heavy modules (engine, native addon, server) lazily, so `--help` and `models list` stay fast.
 */
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { reportError } from "./report-error.js";
import { registerRun } from "./commands/run.js";
import { registerChat } from "./commands/chat.js";
import { registerServe } from "./commands/serve.js";
import { registerModels } from "./commands/models.js";
import { registerKeys } from "./commands/keys.js";
import { registerUsage } from "./commands/usage.js";
import { registerPs } from "./commands/ps.js";
import { registerInfo } from "./commands/info.js";
import { registerLaunch } from "./commands/launch.js";

/** The version of the package this file ships in (dist/cli/main.js and src/cli/main.ts both sit two levels down). */
const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

// A reader that stops early (`kiln models list | head`) closes the pipe: end quietly, as other command-line tools do,
// instead of with a stack trace from the next write.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(0);
});

const program = new Command("kiln")
  .description("Run language models locally and serve them as Anthropic Messages and OpenAI-compatible APIs")
  .version(version)
  .option("--debug", "print stack traces on errors")
  .showHelpAfterError("(run with --help for usage)")
  .exitOverride();

registerRun(program);
registerChat(program);
registerServe(program);
registerModels(program);
registerKeys(program);
registerUsage(program);
registerPs(program);
registerInfo(program);
registerLaunch(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // commander already printed its message; help and version exit 0, bad flags exit 1.
    process.exitCode = error.exitCode === 0 ? 0 : 1;
  } else {
    process.exitCode = reportError(error, { debug: program.opts().debug });
  }
}
