/**
 * Each agent's non-interactive invocation with its default prompt and tools: only what running unattended needs
 * (a prompt flag, permission to edit the scratch repository, machine-readable output, a turn bound for agents that
 * would otherwise go on editing), passed through kiln launch.
 */

/** Arguments after `kiln launch <agent> --` for one task prompt. */
export function agentArguments(agent, task) {
  switch (agent) {
    case "claude":
      return ["-p", task.prompt, "--output-format", "json", "--permission-mode", "acceptEdits", "--allowedTools", "Bash(python3:*)", "--max-turns", "8"];
    case "codex":
      return ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", task.prompt];
    case "opencode":
      return ["run", task.prompt];
    case "aider":
      return ["--message", task.prompt, "--yes-always", "--no-auto-commits", "--no-pretty", ...task.aiderFiles];
    default:
      throw new Error(`unknown agent ${agent}`);
  }
}

/** The agent's final answer text from its stdout (Claude Code prints a JSON result). */
export function answerOf(agent, stdout) {
  if (agent !== "claude") return stdout;
  try {
    return String(JSON.parse(stdout).result ?? "");
  } catch {
    return stdout;
  }
}
