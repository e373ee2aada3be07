import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLeaseFiles, nextHost } from '../src/runtime/local/network/leases.js';
import { hostsFile, parseSupernet, slirpResolvConf } from '../src/runtime/local/network/plan.js';

const stateDir = mkdtempSync(path.join(tmpdir(), 'slipway-net-state-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

describe('network leases', () => {
  it('rewrites the hosts file in place: same inode, only the current entries, never growing past the longest', () => {
    const files = createLeaseFiles(stateDir);
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
    const files = createLeaseFiles(stateDir);
    const a = files.claim({ owner: 'me', workspaceId: 'tea-b' });
    const b = files.claim({ owner: 'other', workspaceId: 'tea-c' });
    expect(a).not.toBe(b);
    expect(files.owned('other').map((o) => o.subnet)).toEqual([b]);
    expect(nextHost(new Set(), 1)).toBe(2);
    expect(nextHost(new Set([3]), 2)).toBe(4); // the freed .2 and the taken .3 are skipped: after the last one
    expect(nextHost(new Set(), 254)).toBe(2);
    expect(nextHost(new Set(Array.from({ length: 253 }, (_, i) => i + 2)), 2)).toBeUndefined();
  });

  it("gives namespaces the host's resolv.conf with slirp4netns's forwarder as the only nameserver", () => {
    const host = 'nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch example.internal\nnameserver ::1\n';
    expect(slirpResolvConf(host)).toBe('nameserver 10.0.2.3\noptions edns0 trust-ad\nsearch example.internal\n');
    expect(slirpResolvConf('')).toBe('nameserver 10.0.2.3\n');
  });

  it('takes only a /16 as the supernet', () => {
    expect(parseSupernet('10.213.0.0/16')).toEqual({ prefix: [10, 213], cidr: '10.213.0.0/16' });
    for (const bad of [
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
