import type { SwarmSettings } from '../model/settings.js';

type Env = Record<string, string | undefined>;

/**
 * SLIPWAY_SWARM_DOCKER_HOST: a swarm manager's Engine API (`unix:///path`, or `tcp://host:2376` with the three
 * SLIPWAY_SWARM_TLS_* files, which a remote manager needs: its API runs anything as root). docs/swarm.md.
 */
export function swarmSettings(env: Env): SwarmSettings | undefined {
  const dockerHost = env.SLIPWAY_SWARM_DOCKER_HOST?.trim();
  if (!dockerHost) return undefined;
  if (!/^(unix:\/\/\/.+|tcp:\/\/[^/]+)$/.test(dockerHost))
    throw new Error(`SLIPWAY_SWARM_DOCKER_HOST must be unix:///path or tcp://host:port, not ${dockerHost}`);
  const files = { ca: env.SLIPWAY_SWARM_TLS_CA, cert: env.SLIPWAY_SWARM_TLS_CERT, key: env.SLIPWAY_SWARM_TLS_KEY };
  const given = Object.values(files).filter(Boolean).length;
  if (given !== 0 && given !== 3)
    throw new Error('SLIPWAY_SWARM_TLS_CA, SLIPWAY_SWARM_TLS_CERT and SLIPWAY_SWARM_TLS_KEY go together');
  if (dockerHost.startsWith('tcp://') && given === 0)
    throw new Error('a tcp:// SLIPWAY_SWARM_DOCKER_HOST needs SLIPWAY_SWARM_TLS_CA, _CERT and _KEY');
  const encrypted = !['0', 'false', 'off'].includes((env.SLIPWAY_SWARM_ENCRYPTED ?? '').toLowerCase());
  return {
    dockerHost,
    tls: given === 3 ? { ca: files.ca!, cert: files.cert!, key: files.key! } : undefined,
    encrypted,
  };
}
