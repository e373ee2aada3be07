/** Paths and query strings with bearer secrets in them (invite tokens, deploy-hook keys) are logged and audited without them. */
export function redactUrl(url: string): string {
  return url
    .replace(/(\/team-invites\/)[^/?]+(\/accept)/, '$1[redacted]$2')
    .replace(/^(\/invites\/)[^/?]+/, '$1[redacted]') // the dashboard's invite page
    .replace(/([?&](?:token|inviteToken|password|key|code)=)[^&]*/gi, '$1[redacted]');
}
