import type { Command } from '../lib/exec.js';
import { freePort } from '../runtime/local/ports.js';
import { PortTakenError, type Placement } from './types.js';

/**
 * A namespace of its own for a datastore server, on its workspace's private network: what the runtime's attachServer
 * and release offer (namespaces mode). Given to the local provisioners as a dependency, so they never see the runtime.
 */
export interface ServerNetwork {
  /**
   * A new namespace for `id` (replacing one it had), where the workspace's apps reach it as `hostnames`; undefined:
   * none. It can reach nothing outside but `exits` (host addresses and ports), at the addresses the answer's exits say.
   */
  attach(
    id: string,
    workspaceId: string,
    hostnames: string[],
    exits?: Exit[],
  ): Promise<{ address: string; wrap(cmd: Command): Command; exits: Exit[] } | undefined>;
  /** Removes it; called once the server stopped. */
  release(id: string): Promise<void>;
}

/** An address and TCP port outside (its backups' S3 endpoint). */
export interface Exit {
  address: string;
  port: number;
}

/** Where a local server listens, and how its command is started there. */
export interface Listener {
  host: string;
  port: number;
  /** Its name on the workspace's private network (namespaces mode). */
  internalHost?: string;
  wrap(cmd: Command): Command;
  /** Where it reaches the exits it was given, seen from its namespace (namespaces mode; same order). */
  exits?: Exit[];
}

export const LOOPBACK = '127.0.0.1';
const asIs = (cmd: Command) => cmd;
/** Ports tried on the shared network before giving up, when each is bound by someone else first. */
const PORT_ATTEMPTS = 3;

/**
 * Namespaces mode (`network` given): each server in a namespace of its own, at its standard port on the namespace's
 * address, named by its id on the workspace's network; nothing else can bind there, so no port is ever taken. Shared
 * network: 127.0.0.1 at a port of its own, which someone else may bind while it is down (PortTakenError, relocate).
 */
export function createServerNetworking(network: ServerNetwork | undefined, standardPort: number) {
  const namespaced = network !== undefined;
  return {
    namespaced,
    /** Whether a server listening at `host` is on this network: one on the other (SLIPWAY_NETWORK changed since) needs a restart. */
    fits: (host: string) => (host !== LOOPBACK) === namespaced,

    /**
     * For a server about to start where `at` says: a fresh namespace (namespaces mode), else loopback at its port; a
     * free one when `at` was a namespace's (the mode changed), whose standard port on the host may be anybody's.
     */
    async listen(
      spec: { id: string; workspaceId: string },
      at: { host: string; port: number },
      exits: Exit[] = [],
    ): Promise<Listener> {
      if (!network) return { host: LOOPBACK, port: at.host === LOOPBACK ? at.port : await freePort(), wrap: asIs };
      const attached = await network.attach(spec.id, spec.workspaceId, [spec.id], exits);
      if (!attached) throw new Error(`the runtime gave the server of ${spec.id} no network namespace`);
      const { address, wrap } = attached;
      return { host: address, port: standardPort, internalHost: spec.id, wrap, exits: attached.exits };
    },

    /** A running server that listens at `at` (adopted). */
    running: (spec: { id: string }, at: { host: string; port: number }): Listener => ({
      host: at.host,
      port: at.port,
      ...(at.host !== LOOPBACK ? { internalHost: spec.id } : {}),
      wrap: asIs,
    }),

    placement: (listener: Listener, state: Record<string, unknown>): Placement => ({
      host: listener.host,
      port: listener.port,
      state: { ...state, ...(listener.internalHost ? { internalHost: listener.internalHost } : {}) },
    }),

    /** Starts a server in a new namespace; on the shared network, on a port free right now (another when someone binds it first). */
    async startFresh(start: (at: Placement) => Promise<Placement>): Promise<Placement> {
      if (namespaced) return start({ host: LOOPBACK, port: standardPort, state: {} });
      for (let attempt = 1; ; attempt++) {
        try {
          return await start({ host: LOOPBACK, port: await freePort(), state: {} });
        } catch (err) {
          if (!(err instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw err;
        }
      }
    },

    /** Removes the server's namespace (after it stopped); nothing on the shared network. */
    release: async (id: string) => network?.release(id),
  };
}
export type ServerNetworking = ReturnType<typeof createServerNetworking>;
