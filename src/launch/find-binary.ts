/** Finds an executable on PATH, as a shell would. */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** The full path of `name` on `path` (PATH's format), or undefined when no directory holds it. */
export function findBinary(name: string, path = process.env.PATH ?? ""): string | undefined {
  const suffixes = process.platform === "win32" ? ["", ".cmd", ".exe"] : [""];
  for (const dir of path.split(delimiter).filter(Boolean)) {
    for (const suffix of suffixes) {
      const candidate = join(dir, name + suffix);
      try {
        accessSync(candidate, constants.X_OK);
        return candidate;
      } catch {
        // not here; try the next directory
      }
    }
  }
  return undefined;
}
