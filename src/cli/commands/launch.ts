import type { Command } from "commander";
import { formatFlagErrors, parseNumberIn } from "../options.js";
import { UsageError } from "../report-error.js";
import { DEFAULT_SERVER_URL } from "./ps.js";

interface LaunchFlags {
  model?: string;
  url: string;
  apiKey?: string;
  ctxSize?: number;
  stop?: boolean;
}

/** Registers `kiln launch`: runs a coding agent (Claude Code, Codex, opencode, Qwen Code, aider) against a local kiln. */
export function registerLaunch(program: Command): void {
  const command = program
    .command("launch")
    .description("run a coding agent (claude, codex, opencode, qwen, aider) on a local model, starting kiln serve if needed")
    .argument("[agent]", "claude | codex | opencode | qwen | aider")
    .argument("[args...]", "arguments for the agent (after --)")
    .option("-m, --model <ref>", "model (default: the running server's, else qwen2.5-coder-0.5b)")
    .option("--url <base>", "where kiln serves, or is started", DEFAULT_SERVER_URL)
    .option("--api-key <key>", "API key for a running kiln that needs one (default: KILN_API_KEY)")
    .option("--ctx-size <n>", "context size when kiln launch starts the server (default: the model's, up to 32768)", parseNumberIn(256, 1_048_576, true))
    .option("--stop", "stop the kiln serve that kiln launch started in the background")
    .addHelpText("after", [
      "",
      "Examples:",
      "  kiln launch claude",
      '  kiln launch claude --model qwen2.5-coder-0.5b -- -p "create hello.py that prints hello" --permission-mode acceptEdits',
      "  kiln launch codex -- exec --full-auto \"add a README\"",
      "  kiln launch qwen --model qwen2.5-coder-1.5b -- -p \"create hello.py that prints hello\" --approval-mode auto-edit",
      "  kiln launch --stop",
      "",
      "A server kiln launch starts keeps running after the agent exits (its prompt stays cached); stop it with --stop.",
    ].join("\n"))
    .action(async (name: string | undefined, args: string[], flags: LaunchFlags) => {
      process.exitCode = await launch(name, args, flags);
    });
  formatFlagErrors(command);
}

async function launch(name: string | undefined, args: string[], flags: LaunchFlags): Promise<number> {
  const { kilnHome } = await import("../../models/index.js");
  const home = kilnHome();
  const log = (line: string) => void process.stderr.write(`${line}\n`);
  if (flags.stop) {
    const { stopBackgroundServer } = await import("../../launch/kiln-server.js");
    const pid = await stopBackgroundServer(home);
    log(pid ? `kiln launch: stopped kiln serve (pid ${pid})` : "kiln launch: no background kiln serve is running");
    return 0;
  }
  const { AGENTS, findAgent } = await import("../../launch/agents/index.js");
  const names = AGENTS.map((a) => a.name).join(", ");
  if (!name) throw new UsageError("which agent? name one", `kiln launch <agent>, one of: ${names}`);
  const agent = findAgent(name);
  if (!agent) throw new UsageError(`unknown agent "${name}"`, `one of: ${names}`);
  const { findBinary } = await import("../../launch/find-binary.js");
  if (!findBinary(agent.binary)) throw new UsageError(`${agent.title} is not installed (no \`${agent.binary}\` on PATH)`, `install it with: ${agent.install}`);
  const { applySetup, prepareTarget, runAgent } = await import("../launch-agent.js");
  const target = await prepareTarget(agent, { ...flags, home }, log);
  const setup = agent.setUp(target);
  log(`kiln launch: running ${agent.title} with:`);
  applySetup(agent, setup, args, log);
  return runAgent(agent, setup, args);
}
