import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from '../../lib/exec.js';
import { writeRunUserFile } from '../server-output.js';
import type { KeyValueSpec } from '../types.js';
import { ADMIN_USER, ownServerRules, passwordHashRule } from './acl.js';

/**
 * Layout of <dataDir>/datastores/<id>/ (0700, Slipway's): admin.secret (the password Slipway logs in with for live
 * config changes), server.json (pid, start time, port of the last launch), server.log (the server's output), and
 * data/ (0700, the run user's): redis.conf (0600), the AOF and redis.sock, the unix socket Slipway alone talks to the
 * server on. The server is started with data/ as its cwd, entered by Slipway (root) before it drops to the run user,
 * and names its config and its socket relative to it: so it needs no permission on any dir above data/, none of them
 * is opened up for it (the run user is also the apps' user), and the socket's own path length never matters to it.
 */

export type RunAs = { uid: number; gid: number };

const CONFIG_VIA_CWD = '/proc/self/cwd/redis.conf';
const SOCKET_NAME = 'redis.sock';

export function datastoreFiles(dataDir: string, id: string) {
  const dir = path.join(dataDir, 'datastores', id);
  const data = path.join(dir, 'data');
  return {
    dir,
    data,
    config: path.join(data, 'redis.conf'),
    socket: path.join(data, SOCKET_NAME),
    adminSecret: path.join(dir, 'admin.secret'),
    serverRecord: path.join(dir, 'server.json'),
    log: path.join(dir, 'server.log'),
  };
}
export type Files = ReturnType<typeof datastoreFiles>;

/**
 * The whole server config, regenerated from the spec before every launch and on every update. Passwords are ACL
 * `user` lines with SHA-256 hashes (what `requirepass` sets for `default`), so the file holds no clear-text password.
 * spec.user `default` is the user clients log in as; any other name becomes an ACL user and `default` is disabled,
 * so a client must log in either way. Clients use the TCP port; Slipway uses only the socket (0700, in the 0700 data
 * dir), so no password of Slipway's goes to a port someone else may have bound while the server was down.
 */
export function serverConfig(
  spec: KeyValueSpec,
  listen: { host: string; port: number },
  adminPassword: string,
): string {
  const clientRules = ownServerRules(spec.password).join(' ');
  const users =
    spec.user === 'default'
      ? [`user default ${clientRules}`]
      : ['user default reset off', `user ${spec.user} ${clientRules}`];
  return (
    [
      '# Written by Slipway before every launch and update of the datastore: change it through the API, not here.',
      `bind ${listen.host}`, // 127.0.0.1 on the shared network, else its namespace's address
      `port ${listen.port}`,
      `unixsocket ${SOCKET_NAME}`,
      'unixsocketperm 700',
      'protected-mode yes',
      'daemonize no',
      // Paid plans: an append-only file synced every second (a crash loses at most about a second); free: memory only.
      `appendonly ${spec.persistent ? 'yes' : 'no'}`,
      'appendfsync everysec',
      'save ""',
      `maxmemory ${spec.size.memoryMb}mb`,
      `maxmemory-policy ${spec.maxmemoryPolicy}`,
      `maxclients ${spec.size.maxConnections}`,
      ...users,
      `user ${ADMIN_USER} reset on ${passwordHashRule(adminPassword)} ~* &* +@all`,
    ].join('\n') + '\n'
  );
}

/** The server, with no arguments but where its config is and an empty environment (Slipway's holds secrets). */
export function serverCommand(serverPath: string, dataDir: string, runAs: RunAs | undefined): Command {
  return {
    file: serverPath,
    args: [CONFIG_VIA_CWD],
    cwd: dataDir,
    env: {},
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
  };
}

export function readAdminPassword(files: Files): string {
  try {
    return readFileSync(files.adminSecret, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const password = randomBytes(24).toString('base64url');
  writeFileSync(files.adminSecret, `${password}\n`, { mode: 0o600, flag: 'wx' });
  return password;
}

export function prepare(
  files: Files,
  spec: KeyValueSpec,
  listen: { host: string; port: number },
  runAs: RunAs | undefined,
): void {
  mkdirSync(files.data, { recursive: true, mode: 0o700 });
  if (runAs) chownSync(files.data, runAs.uid, runAs.gid);
  writeRunUserFile(files.config, serverConfig(spec, listen, readAdminPassword(files)), runAs);
}
