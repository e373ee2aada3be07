import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/app/config.js';
import { ipv4Range, overlaps } from '../src/lib/ip-ranges.js';
import { egressRuleset, refusedRanges } from '../src/runtime/local/network/egress.js';
import { createLeaseFiles, nextHost } from '../src/runtime/local/network/leases.js';
import {
  bridgeName,
  hostsFile,
  instanceNetns,
  parseSupernet,
  slirpResolvConf,
  vethName,
} from '../src/runtime/local/network/plan.js';

const stateDir = mkdtempSync(path.join(tmpdir(), 'slipway-net-state-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));
const NET = parseSupernet('10.213.0.0/16');

describe('network leases', () => {
  it('rewrites the hosts file in place: same inode, only the current entries, never growing past the longest', () => {
    const files = createLeaseFiles(stateDir, NET);
    const subnet = files.claim({ owner: 'me', workspaceId: 'tea-a' })!;
    const many = hostsFile(
      Array.from({ length: 20 }, (_, i) => ({ address: `10.213.${subnet}.${i + 2}`, hostnames: [`svc-${i}`] })),
    );
    files.writeHosts(subnet, many);
    const inode = statSync(files.hostsPath(subnet)).ino;
    for (let round = 0; round < 50; round++) {
      const text = hostsFile([{ address: `10.213.${subnet}.${(round % 250) + 2}`, hostnames: [`api-${round}`] }]);
      files.writeHosts(subnet, text);
      const written = readFileSync(files.hostsPath(subnet), 'utf8');
      expect(written.trimEnd()).toBe(text.trimEnd()); // no stale entry before or after, only blank padding
      expect(written.length).toBe(many.length);
    }
    expect(statSync(files.hostsPath(subnet)).ino).toBe(inode); // a bind mount of it keeps seeing the new text
  });

  it('claims distinct subnets per workspace and hands out addresses round robin', () => {
    const files = createLeaseFiles(stateDir, NET);
    const a = files.claim({ owner: 'me', workspaceId: 'tea-b' });
    const b = files.claim({ owner: 'other', workspaceId: 'tea-c' });
    expect(a).not.toBe(b);
    expect(files.owned('other').map((o) => o.subnet)).toEqual([b]);
    expect(nextHost(new Set(), 1)).toBe(2);
    expect(nextHost(new Set([3]), 2)).toBe(4); // the freed .2 and the taken .3 are skipped: after the last one
    expect(nextHost(new Set(), 254)).toBe(2);
    expect(nextHost(new Set(Array.from({ length: 253 }, (_, i) => i + 2)), 2)).toBeUndefined();
  });

  it('names bridges, veths and namespaces after the range too, within IFNAMSIZ', () => {
    const other = parseSupernet('10.214.0.0/16');
    const files = createLeaseFiles(stateDir, other);
    const subnet = files.claim({ owner: 'me', workspaceId: 'tea-named' })!;
    expect(files.claimOf(subnet)?.bridge).toBe(bridgeName(other, subnet));
    // Two Slipways with different ranges and state dirs (containers on the host's network) both have subnet 0.
    expect(bridgeName(NET, 0)).not.toBe(bridgeName(other, 0));
    expect(vethName(NET, 0, 2)).not.toBe(vethName(other, 0, 2));
    expect(instanceNetns(NET, 0, 2)).not.toBe(instanceNetns(other, 0, 2));
    const widest = parseSupernet('192.168.0.0/16');
    expect(bridgeName(widest, 255).length).toBeLessThanOrEqual(15);
    expect(vethName(widest, 255, 254).length).toBeLessThanOrEqual(15);
  });

  it("opens to namespaces only the IPv4 ranges SLIPWAY_EGRESS_ALLOW lists, never the workspaces' range", () => {
    expect(loadConfig({}).egressAllow).toEqual([]);
    expect(loadConfig({ SLIPWAY_EGRESS_ALLOW: '192.168.10.0/24, 10.1.2.3' }).egressAllow).toEqual([
      '192.168.10.0/24',
      '10.1.2.3',
    ]);
    for (const bad of ['10.0.0.0/8', '10.213.4.5', 'fd00::/8', 'git.internal', '10.1.0.0/33', '127.0.0.1'])
      expect(() => loadConfig({ SLIPWAY_EGRESS_ALLOW: bad }), bad).toThrow(/SLIPWAY_EGRESS_ALLOW/);
    expect(() =>
      loadConfig({ SLIPWAY_EGRESS_ALLOW: '10.213.0.0/16', SLIPWAY_NETWORK_CIDR: '10.214.0.0/16' }),
    ).not.toThrow();
  });

  it("refuses namespaces the machine's addresses and networks, not the internet's", () => {
    const refused = refusedRanges(NET, [ipv4Range('192.0.2.2')!]);
    const isRefused = (address: string) => refused.some((r) => overlaps(r, ipv4Range(address)!));
    const local = [
      '10.213.7.1',
      '10.0.2.2',
      '10.244.0.2',
      '192.168.1.1',
      '172.16.0.1',
      '100.64.0.1',
      '169.254.169.254',
    ];
    for (const address of [...local, '127.0.0.1', '0.0.0.0', '224.0.0.251', '255.255.255.255', '192.0.2.2'])
      expect(isRefused(address), address).toBe(true);
    // The internet, including what a resolver may answer for it (a proxy at 203.0.113.80, fake-IP proxies' 198.18/15).
    for (const address of ['1.1.1.1', '8.8.8.8', '104.16.0.1', '203.0.113.80', '198.18.0.1', '192.0.2.3'])
      expect(isRefused(address), address).toBe(false);
  });

  it("lets a datastore server open connections to its exits only, not the operator's ranges or the internet", () => {
    const rules = (kind: 'server' | 'instance') =>
      egressRuleset({
        net: NET,
        kind,
        subnet: 7,
        allow: [ipv4Range('192.168.5.0/24')!],
        host: [],
        exits: [{ address: '10.0.2.2', port: 9443 }],
      });
    const server = rules('server');
    expect(server).toContain('ip daddr 10.0.2.2 tcp dport 9443 accept');
    expect(server).not.toContain('192.168.5.0');
    expect(server).not.toContain('udp dport 53 accept');
    expect(server.trimEnd().split('\n').at(-3)?.trim()).toBe('jump refuse');
    const instance = rules('instance');
    expect(instance).toContain('ip daddr { 192.168.5.0-192.168.5.255 } accept');
    expect(instance).not.toContain('tcp dport 9443');
    expect(instance).not.toMatch(/^\s*jump refuse$/m);
  });

  it("gives namespaces the host's resolv.conf with slirp4netns's forwarder as the only nameserver", () => {
    const host = 'nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch example.internal\nnameserver ::1\n';
    expect(slirpResolvConf(host)).toBe('nameserver 10.0.2.3\noptions edns0 trust-ad\nsearch example.internal\n');
    expect(slirpResolvConf('')).toBe('nameserver 10.0.2.3\n');
  });

  it('takes only a /16 as the supernet', () => {
    expect(parseSupernet('10.213.0.0/16')).toEqual({ prefix: [10, 213], cidr: '10.213.0.0/16' });
    for (const good of ['172.31.0.0/16', '192.168.0.0/16', '100.127.0.0/16'])
      expect(parseSupernet(good).cidr).toBe(good);
    for (const bad of [
      // Not private: another Slipway's instances there would be reachable through the way out.
      '11.0.0.0/16',
      '172.32.0.0/16',
      '192.169.0.0/16',
      '100.128.0.0/16',
      '198.18.0.0/16',
      '10.213.0.0/24',
      '10.213.1.0/16',
      '300.1.0.0/16',
      'x',
      '127.0.0.0/16',
      '169.254.0.0/16',
      '0.0.0.0/16',
      '224.1.0.0/16',
    ]) {
      expect(() => parseSupernet(bad)).toThrow(/SLIPWAY_NETWORK_CIDR/);
    }
  });
});
