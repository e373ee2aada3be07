/** What start-up made that shutdown undoes: each step pushes its undo, and shutdown runs them last-made first. */
export type Cleanup = Array<() => Promise<void> | void>;

/** Runs the cleanup stack backwards (the last thing made is the first undone). */
export async function closeAll(cleanup: Cleanup): Promise<void> {
  for (const step of cleanup.reverse()) await step();
}
