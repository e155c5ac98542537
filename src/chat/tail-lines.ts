/**
 * The end of a text that fits in `rows` terminal rows of `columns` cells. A streaming reply taller than the
 * screen would make Ink clear and redraw the whole terminal on every token; showing its tail while it streams
 * avoids that, and the full reply is printed once it is finished.
 */
export function tailLines(text: string, columns: number, rows: number): string {
  const width = Math.max(1, columns);
  const lines = text.split("\n");
  const kept: string[] = [];
  let used = 0;
  for (let i = lines.length - 1; i >= 0 && used < rows; i--) {
    const line = lines[i]!;
    const height = Math.max(1, Math.ceil(line.length / width));
    if (used + height <= rows) {
      kept.unshift(line);
      used += height;
      continue;
    }
    // Only part of this line fits: keep its last rows, cut at a row boundary.
    const fit = rows - used;
    kept.unshift(line.slice((height - fit) * width));
    used = rows;
  }
  return kept.join("\n");
}
