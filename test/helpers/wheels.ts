/**
 * Real Python wheels for pull tests: zip archives with dist-info, written by Python's zipfile, in a folder pip
 * reads as its only package index (PIP_NO_INDEX + PIP_FIND_LINKS).
 */
import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const WHEEL_SCRIPT = `
import sys, zipfile
wheel, name, version, data_name, data_path, corrupt = sys.argv[1:7]
top = name.replace("-", "_")
dist = top + "-" + version + ".dist-info"
data = open(data_path, "rb").read()
with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED if corrupt == "1" else zipfile.ZIP_DEFLATED) as z:
    z.writestr(top + "/__init__.py", "")
    z.writestr(top + "/data/" + data_name, data)
    z.writestr(dist + "/METADATA", "Metadata-Version: 2.1\\nName: " + name + "\\nVersion: " + version + "\\n")
    z.writestr(dist + "/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr(dist + "/RECORD", "")
if corrupt == "1":
    # Flip one stored byte of the data: the archive stays readable, the entry's CRC-32 no longer matches.
    raw = bytearray(open(wheel, "rb").read())
    at = raw.find(data)
    raw[at + len(data) // 2] ^= 0xFF
    open(wheel, "wb").write(bytes(raw))
`;

/** What one wheel holds: `<package>/data/<file>` with these bytes; `corrupt` flips a byte after zipping. */
export interface WheelSpec {
  /** The distribution name as pip sees it, e.g. `kiln-cat-part1`. */
  package: string;
  version: string;
  file: string;
  data: Buffer;
  corrupt?: boolean;
}

/** Writes the wheel into `dir` (the find-links folder); returns its path. */
export async function writeWheel(dir: string, spec: WheelSpec): Promise<string> {
  const top = spec.package.replace(/-/g, "_");
  const wheel = join(dir, `${top}-${spec.version}-py3-none-any.whl`);
  const dataPath = join(dir, `${top}-${spec.version}.data.bin`);
  await writeFile(dataPath, spec.data);
  await promisify(execFile)("python3", ["-c", WHEEL_SCRIPT, wheel, spec.package, spec.version, spec.file, dataPath, spec.corrupt ? "1" : "0"]);
  await rm(dataPath);
  return wheel;
}
