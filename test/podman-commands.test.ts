/** Podman's command lines (src/runtime/containers/podman.ts): a tenant's values stay off them, and out of Podman's config. */
import { describe, expect, it } from 'vitest';
import { buildCommand, runCommand, type PodmanSetup } from '../src/runtime/containers/podman.js';

const setup: PodmanSetup = {
  podman: '/usr/bin/podman',
  ociRuntime: '/usr/sbin/runc',
  registriesConf: '/x.conf',
  containersConf: '/containers.conf',
  init: true,
  nofile: 1024,
  userNamespaces: true,
  nproc: 4096,
};
const storage = { root: '/data/services/srv-1/containers', runRoot: '/run/slipway/containers/k' };
const limits = { memoryMb: 512, cpuMillicores: 500, pids: 512, diskMb: 512 };

describe('podman command lines', () => {
  it("keeps build args' values off the command line, and a name Podman reads out of its environment", () => {
    const cmd = buildCommand(setup, storage, {
      contextDir: '/src',
      dockerfile: '/src/Dockerfile',
      tag: 'localhost/slipway/srv-1:dep-1',
      buildArgs: { DATABASE_URL: 'postgres://u:hunter2@db/x', CONTAINERS_CONF: '/tmp/evil.conf' },
      limits,
      netnsPath: undefined,
      noCache: false,
    });
    expect(cmd.args.join(' ')).not.toContain('hunter2');
    expect(cmd.args).toContain('DATABASE_URL');
    expect(cmd.env?.DATABASE_URL).toBe('postgres://u:hunter2@db/x');
    expect(cmd.env?.CONTAINERS_CONF).toBe('/containers.conf');
    expect(cmd.env?.CONTAINERS_REGISTRIES_CONF).toBe('/x.conf');
    expect(cmd.args).toContain('CONTAINERS_CONF=/tmp/evil.conf');
  });

  it('gives a multi-line env value through the environment, and a tenant cannot replace PATH or HOME there', () => {
    const cmd = runCommand(
      setup,
      storage,
      {
        name: 'slw-i',
        image: 'localhost/slipway/srv-1:dep-1',
        cgroupParent: undefined,
        netnsPath: undefined,
        user: '65534:65534',
        envFile: '/d/container.env',
        envArgs: { TLS_KEY: '-----BEGIN KEY-----\nsecret\n-----END KEY-----', PATH: 'a\nb' },
        limits,
        labels: {},
      },
      'detached',
    );
    expect(cmd.args.join(' ')).not.toContain('secret');
    expect(cmd.env?.TLS_KEY).toContain('secret');
    expect(cmd.env?.PATH).toBe('/usr/sbin:/usr/bin:/sbin:/bin');
  });
});
