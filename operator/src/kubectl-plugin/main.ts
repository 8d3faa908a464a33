// `kubectl narad`: parse, run one command, map the outcome to an exit code
// (0 done, 1 failed, 2 usage). The decisions and formats live in the pure
// modules beside this one; this file wires them to kube.ts.

import { BROKER_HTTP_PORT } from "../constants.ts";
import { OPERATOR_VERSION } from "../install/install.ts";
import { apiMessage } from "../kube/api.ts";
import { actionMessage, actionPatch, choosePod } from "./actions.ts";
import { type Command, parseArgs } from "./args.ts";
import { completionPlan, Directive, renderCompletion } from "./complete.ts";
import { connectionInfo, renderCredentials, usersSecretToRead } from "./credentials.ts";
import { PluginError } from "./errors.ts";
import type { PluginKube } from "./kube.ts";
import { renderStatus, statusView } from "./status-view.ts";
import { usageOf } from "./usage.ts";

export interface PluginIo {
  out: (text: string) => void;
  err: (text: string) => void;
  now: () => Date;
  /** Resolves when the user interrupts (port-forward runs until then). */
  interrupted: () => Promise<void>;
}

export async function runPlugin(argv: readonly string[], io: PluginIo): Promise<number> {
  if (argv[0] === COMPLETE) return complete(argv.slice(1), io);
  const parsed = parseArgs(argv);
  switch (parsed.kind) {
    case "help":
      io.out(`${usageOf(parsed.command)}\n`);
      return 0;
    case "version":
      io.out(`kubectl-narad ${OPERATOR_VERSION}\n`);
      return 0;
    case "usage-error": {
      const help =
        parsed.command === undefined ? "kubectl narad --help" : `kubectl narad ${parsed.command} --help`;
      io.err(`error: ${parsed.message} (see ${help})\n`);
      return 2;
    }
    case "run":
      try {
        // Loaded only to run a command: client-node takes seconds to import
        // on a busy machine, which --help and usage errors need not wait for.
        const { loadKubeConfig, PluginKube } = await import("./kube.ts");
        const { kc, namespace } = loadKubeConfig(parsed.connection);
        return await execute(parsed.command, new PluginKube(kc), namespace, io);
      } catch (err) {
        io.err(`error: ${err instanceof PluginError ? err.message : apiMessage(err)}\n`);
        return 1;
      }
  }
}

/** The hidden command kubectl_complete-narad runs (cobra's name for it). */
export const COMPLETE = "__complete";

/**
 * Completion never fails on the shell's prompt: an unreadable kubeconfig or an
 * API error offers no cluster names, and the answer is still well formed.
 */
async function complete(typed: readonly string[], io: PluginIo): Promise<number> {
  const plan = completionPlan(typed);
  if (plan.kind === "words") {
    io.out(renderCompletion(plan.words, plan.directive));
    return 0;
  }
  let names: string[] = [];
  try {
    const { loadKubeConfig, PluginKube } = await import("./kube.ts");
    const { kc, namespace } = loadKubeConfig(plan.connection);
    names = (await new PluginKube(kc).clusterNames(namespace)).filter((n) => n.startsWith(plan.prefix));
  } catch {
    names = [];
  }
  io.out(renderCompletion(names, Directive.NoFileComp));
  return 0;
}

async function execute(command: Command, kube: PluginKube, namespace: string, io: PluginIo): Promise<number> {
  switch (command.name) {
    case "status": {
      const cluster = await kube.cluster(namespace, command.cluster);
      const view = statusView(cluster, await kube.pods(namespace, command.cluster));
      if (command.output === "json") io.out(`${JSON.stringify(view, null, 2)}\n`);
      else if (command.output === "yaml") {
        const { dump } = await import("js-yaml");
        io.out(dump(view, { noRefs: true, lineWidth: -1 }));
      } else io.out(renderStatus(view, io.now().getTime()));
      return 0;
    }
    case "restart":
    case "rebalance": {
      const patched = await kube.patchCluster(
        namespace,
        command.cluster,
        actionPatch(command.name, io.now()),
      );
      io.out(actionMessage(command.name, patched));
      return 0;
    }
    case "credentials": {
      const cluster = await kube.cluster(namespace, command.cluster);
      const secretName = usersSecretToRead(cluster);
      const secret = secretName === undefined ? undefined : await kube.secret(namespace, secretName);
      const info = connectionInfo(cluster, secret);
      io.out(command.json ? `${JSON.stringify(info, null, 2)}\n` : renderCredentials(info));
      return 0;
    }
    case "port-forward": {
      const cluster = await kube.cluster(namespace, command.cluster);
      const choice = choosePod(cluster, await kube.pods(namespace, command.cluster), command.pod);
      if (!choice.ok) throw new PluginError(choice.error);
      const { port, close } = await kube.forward(
        namespace,
        choice.pod,
        BROKER_HTTP_PORT,
        command.address,
        command.localPort,
        (message) => io.err(`error: ${message}\n`),
      );
      const host = command.address.includes(":") ? `[${command.address}]` : command.address;
      const scheme = cluster.spec?.security?.tls === undefined ? "http" : "https";
      io.out(
        `Forwarding ${scheme}://${host}:${port} -> ${namespace}/${choice.pod}:${BROKER_HTTP_PORT} (Ctrl-C to stop)\n`,
      );
      await io.interrupted();
      await close();
      return 0;
    }
  }
}
