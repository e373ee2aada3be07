/**
 * `.env` text as pairs, read as dotenv and Node's util.parseEnv read it: `KEY=value`, an optional `export `, `#`
 * comments, single or double quotes (double quotes expand \n). Lines that are not assignments are reported back.
 */
export function parseDotenv(text: string): { pairs: Array<[string, string]>; rejected: string[] } {
  const pairs: Array<[string, string]> = [];
  const rejected: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/.exec(line);
    if (!match) {
      rejected.push(line);
      continue;
    }
    let value = match[2]!;
    const quote = value[0];
    if ((quote === '"' || quote === "'" || quote === '`') && value.lastIndexOf(quote) > 0) {
      value = value.slice(1, value.lastIndexOf(quote));
      if (quote === '"') value = value.replace(/\\n/g, '\n');
    } else {
      value = value.replace(/\s+#.*$/, '');
    }
    pairs.push([match[1]!, value]);
  }
  return { pairs, rejected };
}
