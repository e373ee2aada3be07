/**
 * `npm run swarm:node-guard -- [allowed CIDR …]`: prints the firewall script each node of a swarm runs as root, so
 * that tasks reach the internet but not their node nor the networks behind it (docs/swarm.md, "Egress").
 */
import { nodeGuardScript } from './runtime/swarm/node-guard.js';

process.stdout.write(nodeGuardScript(process.argv.slice(2)));
