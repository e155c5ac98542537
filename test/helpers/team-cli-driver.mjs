// Runs `kiln keys` / `kiln usage` from the build with the same program settings and error reporting as
// dist/cli/main.js, for as long as main.js does not register these commands itself.
import { Command, CommanderError } from "commander";
import { registerKeys } from "../../dist/cli/commands/keys.js";
import { registerUsage } from "../../dist/cli/commands/usage.js";
import { reportError } from "../../dist/cli/report-error.js";

const program = new Command("kiln").option("--debug").showHelpAfterError("(run with --help for usage)").exitOverride();
registerKeys(program);
registerUsage(program);
try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exitCode = error.exitCode === 0 ? 0 : 1;
  else process.exitCode = reportError(error, { debug: program.opts().debug });
}
