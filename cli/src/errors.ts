/** Exit codes (docs/cli.md, "Exit codes"): scripts branch on them. */
export const EXIT = {
  OK: 0,
  /** The API refused the request (its message is printed), or something else failed. */
  ERROR: 1,
  /** A bad command line or a bad local file. */
  USAGE: 2,
  /** Not signed in, a wrong password or key, or a role that may not do this (401/403). */
  AUTH: 3,
  NOT_FOUND: 4,
  /** `deploy`: the deploy ended without going live. */
  DEPLOY_FAILED: 5,
  /** Slipway could not be reached. */
  UNREACHABLE: 6,
} as const;

/** The one error type of the CLI: main prints its message and hint on stderr and exits with its code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.ERROR,
    readonly hint?: string,
  ) {
    super(message);
  }
}
