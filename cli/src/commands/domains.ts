import type { Command } from 'commander';
import { ok } from '../api.js';
import { note, out, print, show, status, table } from '../output.js';
import { findService, session, withServiceOption } from '../session.js';

type Domain = {
  name: string;
  id: string;
  verificationStatus: string;
  unverifiedReason?: string;
  dnsRecords?: Array<{ type: string; name: string; value: string }>;
  verificationRecord?: { type: string; name: string; value: string };
};

/** What to create at the DNS provider: the records that route the name, and the TXT record that proves ownership. */
function records(domain: Domain): string {
  const rows = [...(domain.dnsRecords ?? []), ...(domain.verificationRecord ? [domain.verificationRecord] : [])];
  return rows.length
    ? table(
        ['type', 'name', 'value'],
        rows.map((r) => [r.type, r.name, r.value]),
      )
    : '';
}

const row = (d: Domain) => [d.name, d.id, status(d.verificationStatus), d.unverifiedReason ?? ''];

export function domainCommands(program: Command): void {
  const domains = program.command('domains').description("A service's custom domains");
  withServiceOption(domains.command('add <name>'))
    .description('Add a custom domain, and show the DNS records to create')
    .option('--json', 'print JSON')
    .action(async (name: string, options: { service?: string; json?: boolean }, command: Command) => {
      const current = session(command);
      const service = await findService(current, options.service);
      // Render answers the name and, for an apex or www name, its redirect twin.
      const added: Domain[] = await ok(
        current.api.POST('/v1/services/{serviceId}/custom-domains', {
          params: { path: { serviceId: service.id } },
          body: { name },
        }),
      );
      show(options.json, added, () =>
        added.map((d) => `${out.green('✓')} Added ${d.name}. Create these DNS records:\n\n${records(d)}\n`).join('\n'),
      );
    });
  withServiceOption(domains.command('ls'))
    .description("List a service's custom domains and their verification")
    .option('--json', 'print JSON')
    .action(async (options: { service?: string; json?: boolean }, command: Command) => {
      const current = session(command);
      const service = await findService(current, options.service);
      const list = (
        await ok(
          current.api.GET('/v1/services/{serviceId}/custom-domains', { params: { path: { serviceId: service.id } } }),
        )
      ).map((item): Domain => item.customDomain);
      show(options.json, list, () => table(['name', 'id', 'status', 'reason'], list.map(row)));
    });
  withServiceOption(domains.command('verify <name>'))
    .description("Check a domain's DNS records now; says what is missing")
    .option('--json', 'print JSON')
    .action(async (name: string, options: { service?: string; json?: boolean }, command: Command) => {
      const current = session(command);
      const service = await findService(current, options.service);
      const path = { serviceId: service.id, customDomainIdOrName: name };
      await ok(
        current.api.POST('/v1/services/{serviceId}/custom-domains/{customDomainIdOrName}/verify', { params: { path } }),
      );
      const domain: Domain = await ok(
        current.api.GET('/v1/services/{serviceId}/custom-domains/{customDomainIdOrName}', { params: { path } }),
      );
      if (options.json) return show(true, domain, () => '');
      if (domain.verificationStatus === 'verified') return print(`${out.green('✓')} ${domain.name} is verified`);
      print(
        `${out.yellow('✗')} ${domain.name} is not verified: ${domain.unverifiedReason ?? 'the records are not there yet'}`,
      );
      note(`\nCreate these DNS records:\n\n${records(domain)}`);
    });
}
