/**
 * The agents benchmark's tasks: each seeds a fresh git repository, gives the agent one instruction, and checks the
 * result on the files and by running them (python3), never by reading the agent's prose except for `explain`.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const run = (dir, file) => {
  try {
    return { ok: true, out: execFileSync("python3", [file], { cwd: dir, encoding: "utf8", timeout: 20_000, stdio: ["ignore", "pipe", "pipe"] }) };
  } catch (error) {
    return { ok: false, out: String(error.stdout ?? "") + String(error.stderr ?? "") };
  }
};
const read = (dir, file) => (existsSync(join(dir, file)) ? readFileSync(join(dir, file), "utf8") : undefined);

/** Files changed or added since the seed commit. */
function changedFiles(dir) {
  const out = execFileSync("git", ["status", "--porcelain"], { cwd: dir, encoding: "utf8" });
  return out.split("\n").filter(Boolean).map((line) => line.slice(3));
}

export const TASKS = [
  {
    name: "create",
    files: {},
    prompt: "Create a file named hello.py that prints exactly: hello from kiln",
    aiderFiles: ["hello.py"],
    check(dir) {
      const result = run(dir, "hello.py");
      return { success: result.ok && result.out.trim() === "hello from kiln", detail: result.out.trim().slice(0, 200) };
    },
  },
  {
    name: "fix-test",
    files: {
      "calc.py": "def add(a, b):\n    return a - b\n",
      "test_calc.py": "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint(\"ok\")\n",
    },
    prompt: "Running `python3 test_calc.py` fails. Fix the bug in calc.py (one line) so the test passes. Do not change test_calc.py.",
    aiderFiles: ["calc.py", "test_calc.py"],
    check(dir) {
      const result = run(dir, "test_calc.py");
      const untouched = !changedFiles(dir).includes("test_calc.py");
      return { success: result.ok && untouched, detail: `${result.out.trim().slice(0, 200)}${untouched ? "" : " (test file edited)"}` };
    },
  },
  {
    name: "rename",
    files: {
      "util.py": "def get_total(items):\n    return sum(items)\n",
      "main.py": "from util import get_total\n\nprint(get_total([1, 2, 3]))\n",
    },
    prompt: "Rename the function get_total to compute_total everywhere: its definition in util.py and its use in main.py.",
    aiderFiles: ["util.py", "main.py"],
    check(dir) {
      const sources = [read(dir, "util.py") ?? "", read(dir, "main.py") ?? ""].join("\n");
      const result = run(dir, "main.py");
      const renamed = !sources.includes("get_total") && /def compute_total\(/.test(sources);
      return { success: renamed && result.ok && result.out.trim() === "6", detail: result.out.trim().slice(0, 200) };
    },
  },
  {
    name: "explain",
    files: { "stats.py": "def mean(values):\n    return sum(values) / len(values)\n\n\nprint(mean([2, 4, 6]))\n" },
    prompt: "Explain in two sentences what stats.py does. Do not edit any file.",
    aiderFiles: ["stats.py"],
    check(dir, answer) {
      // aider adds `.aider*` to .gitignore and keeps its history there: housekeeping, not an edit of the project.
      const unchanged = changedFiles(dir).filter((f) => !f.startsWith(".aider") && f !== ".gitignore").length === 0;
      const mentions = /\b(mean|average)\b/i.test(answer);
      return { success: unchanged && mentions, detail: `${unchanged ? "no edits" : "edited files"}; answer ${mentions ? "names the mean" : "misses the mean"}` };
    },
  },
];
