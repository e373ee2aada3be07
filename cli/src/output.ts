import pc from 'picocolors';

/**
 * Colour only where a person reads it: on a terminal, unless NO_COLOR is set (FORCE_COLOR forces it). Decided per
 * stream, so `slipway logs | grep` gets plain text while stderr's progress stays coloured.
 */
function colorsFor(stream: NodeJS.WriteStream) {
  const env = process.env;
  const enabled =
    !('NO_COLOR' in env && env.NO_COLOR !== '') && (!!env.FORCE_COLOR || (stream.isTTY && env.TERM !== 'dumb'));
  return pc.createColors(!!enabled);
}

export const out = colorsFor(process.stdout);
export const err = colorsFor(process.stderr);

/** The result of a command: stdout holds nothing else, so it pipes. */
export function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : text + '\n');
}

export function printJson(value: unknown): void {
  print(JSON.stringify(value, null, 2));
}

/** Progress and notes for the person at the terminal: stderr. */
export function note(text: string): void {
  process.stderr.write(text + '\n');
}

/** Columns padded to their widest cell, as kubectl's and flyctl's tables: no borders, so they grep and cut. */
export function table(headers: string[], rows: string[][]): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((row) => visibleLength(row[i] ?? ''))));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell + ' '.repeat(widths[i]! - visibleLength(cell))))
      .join('  ')
      .trimEnd();
  return [line(headers.map((h) => out.bold(h.toUpperCase()))), ...rows.map(line)].join('\n');
}

const visibleLength = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '').length;

/** A status coloured by what it means: live and available green, failures red, the rest yellow. */
export function status(value: string): string {
  if (/^(live|available|succeeded|verified|not_suspended|running|issued)$/.test(value)) return out.green(value);
  if (/(failed|canceled|deactivated|suspended|error|crash)/.test(value)) return out.red(value);
  return out.yellow(value);
}

/** `--json` prints the API's bodies as they are; otherwise the table. */
export function show(json: boolean | undefined, value: unknown, render: () => string): void {
  if (json) printJson(value);
  else print(render());
}
