import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { parse } from 'tldts';
import { badRequest } from '../../lib/errors.js';

/** A custom domain's name as Slipway keeps it, and the twin Render adds with it. */
export interface CheckedName {
  name: string;
  domainType: 'apex' | 'subdomain';
  publicSuffix: string;
  /** The `www.` twin of an apex, or the apex of a `www.` name, which redirects to `name`. */
  twin?: { name: string; domainType: 'apex' | 'subdomain' };
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Validates a custom domain's name: a hostname (an IDN is converted to punycode), not an IP address, not a public
 * suffix itself, and not under the apps domain (those names are Slipway's own).
 */
export function checkDomainName(input: string, appsDomain: string): CheckedName {
  const ascii = domainToASCII(input.trim().toLowerCase().replace(/\.$/, ''));
  if (
    !ascii ||
    isIP(ascii) ||
    ascii.length > 253 ||
    !ascii.split('.').every((l) => LABEL.test(l)) ||
    !ascii.includes('.')
  )
    throw badRequest(`"${input}" is not a hostname (example: www.example.com)`);
  const apps = appsDomain.toLowerCase();
  if (ascii === apps || ascii.endsWith(`.${apps}`))
    throw badRequest(`names under ${apps} are Slipway's own: every service already answers at <slug>.${apps}`);
  const parsed = parse(ascii);
  if (!parsed.domain || !parsed.publicSuffix)
    throw badRequest(`"${ascii}" is a public suffix, not a domain that can be registered`);
  const domainType = ascii === parsed.domain ? 'apex' : 'subdomain';
  const twin =
    domainType === 'apex'
      ? { name: `www.${ascii}`, domainType: 'subdomain' as const }
      : ascii === `www.${parsed.domain}`
        ? { name: parsed.domain, domainType: 'apex' as const }
        : undefined;
  return { name: ascii, domainType, publicSuffix: parsed.publicSuffix, ...(twin ? { twin } : {}) };
}
