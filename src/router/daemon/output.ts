import { fstatSync, ftruncateSync } from 'node:fs';

// stdout is router.log, opened for appending (index.ts) and shared by every process of the router: emptied when it
// grows large, so it never fills the disk.
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** JSON lines on stdout, in the shape of the API's own log. */
export function createDaemonLog() {
  let outputBytes = (() => {
    try {
      return fstatSync(1).size;
    } catch {
      return 0;
    }
  })();
  const say = (level: string) => (fields: object, msg?: string) => {
    const text = JSON.stringify(
      { level, time: new Date().toISOString(), pid: process.pid, ...fields, msg },
      (_key, value: unknown) => (value instanceof Error ? value.message : value),
    );
    outputBytes += text.length + 1;
    if (outputBytes > MAX_OUTPUT_BYTES) {
      outputBytes = text.length + 1;
      try {
        ftruncateSync(1, 0);
      } catch {
        // not a file (run by hand in a terminal)
      }
    }
    console.log(text);
  };
  return { debug: () => undefined, info: say('info'), warn: say('warn'), error: say('error') };
}
export type DaemonLog = ReturnType<typeof createDaemonLog>;
