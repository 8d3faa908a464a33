// The producer-id registry behind POST /v1/producers, and the fencing that
// keeps brokers sharing its store from accepting one id's two epochs
// (docs/adr/0008-producer-fence-lease.md).

import type { Logger } from "pino";
import { resourceNames } from "../../../packages/api/src/v1alpha1/names.ts";
import type { Config } from "../config.ts";
import { type ConfirmAnswer, confirmedByAll, confirmTargets } from "../core/producer-fence.ts";
import { loadKubeConfig } from "../meta/kube-metastore.ts";
import type { Metastore } from "../meta/types.ts";
import type { BrokerMetrics } from "../metrics.ts";
import { kubeRegistryStore } from "../producers/kube-registry-store.ts";
import {
  defaultIdBlock,
  fileRegistryStore,
  openProducerRegistry,
  type ProducerRegistry,
  type RegistryFenceOptions,
  type RegistryStore,
} from "../producers/registry.ts";
import type { PeerClient } from "../rpc/client.ts";

export interface NodeRegistryDeps {
  config: Config;
  logger: Logger;
  metrics: BrokerMetrics;
  metastore: Metastore;
  clustered: boolean;
  /** A store shared by in-process brokers (StartBrokerOptions.producerRegistryStore). */
  storeOverride: RegistryStore | undefined;
  /** A member's RPC client, looked up at call time (the peer pool opens after the registry). */
  peer: (address: string) => Pick<PeerClient, "confirmProducerEpoch">;
  nowMs: () => number;
  monoMs: () => number;
}

/** Undefined when no store could be opened: idempotent producers are refused (503). */
export async function openNodeProducerRegistry(d: NodeRegistryDeps): Promise<ProducerRegistry | undefined> {
  const { config, logger, metrics, metastore, clustered } = d;
  // Producer identities: the data dir's file on one node, a ConfigMap with
  // the kubernetes metastore, a shared store in in-process cluster tests.
  // A broker that cannot open the ConfigMap (its Role predates the registry:
  // 403) still serves everything else; POST /v1/producers answers 503.
  const openKubeRegistry = async (): Promise<RegistryStore | undefined> => {
    try {
      return await kubeRegistryStore({
        kubeConfig: loadKubeConfig(),
        namespace: config.namespace,
        name: resourceNames(config.clusterName).producerRegistry,
        block: defaultIdBlock,
        logger: logger.child({ component: "producer-registry" }),
      });
    } catch (err) {
      logger.error(
        { err: err instanceof Error ? err.message : String(err) },
        "producer registry unavailable: idempotent producers are refused until a restart can open it",
      );
      return undefined;
    }
  };
  const registryStore =
    d.storeOverride ??
    (metastore.kind === "kubernetes"
      ? await openKubeRegistry()
      : clustered
        ? undefined
        : fileRegistryStore(config.dataDir));
  // Fencing across brokers (cluster mode: several brokers share the store;
  // docs/adr/0008-producer-fence-lease.md). A single node's view is the store.
  const selfListed = (): boolean => metastore.members().some((m) => m.id === config.nodeId);
  /** The re-init barrier's question to every other member; true only when all that may decide confirmed. */
  const confirmEverywhere = async (id: string, epoch: number, timeoutMs: number): Promise<boolean> => {
    const membershipBefore = metastore.membershipEpoch?.() ?? 0;
    // A member list from a lagging metastore watch may lack a broker: only the lease covers it.
    if (metastore.caughtUp?.() === false) return false;
    const plan = confirmTargets(metastore.members(), config.nodeId);
    if (!plan.complete) return false;
    const deadlineMs = d.nowMs() + timeoutMs;
    const answers = await Promise.all(
      plan.addresses.map((address) =>
        d
          .peer(address)
          .confirmProducerEpoch({ producer_id: id, epoch, from_node: config.nodeId }, deadlineMs)
          .then(
            (r): ConfirmAnswer => ({ epoch: r.epoch, membershipEpoch: r.membership_epoch }),
            (err: unknown) => {
              logger.debug(
                { address, producer: id, epoch, err: err instanceof Error ? err.message : String(err) },
                "producer epoch not confirmed by a member; the re-init waits out the fence lease",
              );
              return undefined;
            },
          ),
      ),
    );
    return confirmedByAll(plan, answers, epoch, membershipBefore, metastore.membershipEpoch?.() ?? 0);
  };
  const fence: RegistryFenceOptions | undefined = clustered
    ? {
        leaseMs: config.producerFenceLeaseMs,
        nowMs: d.monoMs,
        trusted: selfListed,
        confirm: confirmEverywhere,
        onBarrier: (outcome, ms) => {
          metrics.producerFenceBarriers.inc({ outcome });
          metrics.producerFenceBarrierSeconds.observe({ outcome }, ms / 1000);
        },
        onRead: (reason, ok) => metrics.producerRegistryReads.inc({ reason, result: ok ? "ok" : "error" }),
      }
    : undefined;
  const producerRegistry =
    registryStore === undefined
      ? undefined
      : await openProducerRegistry(registryStore, defaultIdBlock, config.limits.maxNamedProducers, fence);
  if (producerRegistry !== undefined && fence !== undefined) {
    // Joining the member list: a barrier that started before other brokers
    // listed this one did not ask it, so the reads from before do not count.
    let listed = selfListed();
    metastore.onChange(() => {
      const now = selfListed();
      if (now && !listed) producerRegistry.expireLease();
      listed = now;
    });
  }
  return producerRegistry;
}

/**
 * The member side of the re-init barrier (the ConfirmProducerEpoch RPC):
 * the epoch this node's registry view holds, after a fresh read when needed.
 */
export function confirmProducerEpochHandler(d: {
  producerRegistry: ProducerRegistry;
  metastore: Pick<Metastore, "membershipEpoch">;
  logger: Logger;
}): (req: {
  producer_id: string;
  epoch: number;
  from_node: string;
}) => Promise<{ epoch: number; membership_epoch: number }> {
  return async (req) => {
    const held = await d.producerRegistry.confirmEpoch(req.producer_id, req.epoch);
    const fields = { producer: req.producer_id, epoch: req.epoch, held, from: req.from_node };
    // Not backed by the store even after a fresh read: the asker is
    // confused (another registry, a forged call); its barrier waits out the lease.
    if (held === undefined || held < req.epoch)
      d.logger.warn(fields, "ConfirmProducerEpoch for an epoch the producer registry does not hold");
    else d.logger.debug(fields, "producer epoch confirmed for a re-init's barrier");
    return { epoch: held ?? 0, membership_epoch: d.metastore.membershipEpoch?.() ?? 0 };
  };
}
