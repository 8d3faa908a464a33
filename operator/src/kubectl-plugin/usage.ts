// Help texts of `kubectl narad` (docs/kubectl-plugin.md shows the same commands with output).

import type { CommandName } from "./args.ts";

const connectionFlags = `Connection flags (any command; as kubectl reads them):
  --kubeconfig FILE    kubeconfig to use (else $KUBECONFIG, else ~/.kube/config)
  --context NAME       kubeconfig context to use (else its current-context)
  -n, --namespace NS   namespace of the NaradCluster (else the context's, else "default")`;

export const pluginUsage = `Usage: kubectl narad <command> <cluster> [flags]

Day-2 commands for NaradCluster resources (narad.dev/v1alpha1).

Commands:
  status <cluster> [-o json|yaml]        phase, conditions, members, roll and scale progress
  restart <cluster>                      rolling restart of every broker (narad.dev/restartedAt)
  rebalance <cluster>                    one rebalance of partitions over the Active members
  credentials <cluster> [--json]         the client URL and the admin credentials
  port-forward <cluster> [local-port]    forward a local port to a Ready broker's HTTP port

  kubectl narad <command> --help         help for one command
  kubectl narad --version                the plugin's version

${connectionFlags}

Exit codes: 0 done, 1 failed (e.g. no such cluster), 2 usage error.`;

const commandUsage: Record<CommandName, string> = {
  status: `Usage: kubectl narad status <cluster> [-o json|yaml]

Shows what the operator reports in the NaradCluster's status: phase,
conditions, spec vs ready replicas, image, the members (state, pod, Ready,
node, WAL records pending), a planned restart in flight and scale-down or
rebalance moves. Pods are read for readiness and node.

Flags:
  -o, --output FORMAT   table (default), json or yaml`,
  restart: `Usage: kubectl narad restart <cluster>

Sets the annotation narad.dev/restartedAt to the current time. The operator
copies it onto the pod template, which changes the revision: it then
restarts the brokers one at a time, each drained first (docs/rolling-restarts.md).`,
  rebalance: `Usage: kubectl narad rebalance <cluster>

Sets the annotation narad.dev/rebalance to the current time: a new value asks
the operator for one rebalance of existing partitions over the Active
members, even with spec.rebalance false. It starts once every member is
Active and no roll runs; status.scale.rebalanceHandled records the value
served (docs/scaling.md).`,
  credentials: `Usage: kubectl narad credentials <cluster> [--json]

Prints what a client inside the cluster needs: the client Service URL and,
with auth on, the username and password from the users Secret
(spec.security.auth.usersSecret, else <cluster>-users).

Flags:
  --json   one JSON object instead of text`,
  "port-forward": `Usage: kubectl narad port-forward <cluster> [local-port] [--address ADDR] [--pod POD]

Forwards a local port (default 7942; 0 picks a free one) to the HTTP port
of a Ready broker pod, through the API server, until interrupted. Prefers
an Active member, lowest ordinal first.

Flags:
  --address ADDR   local address to listen on (default 127.0.0.1)
  --pod POD        forward to this broker pod instead`,
};

export function usageOf(command: CommandName | undefined): string {
  return command === undefined ? pluginUsage : `${commandUsage[command]}\n\n${connectionFlags}`;
}
