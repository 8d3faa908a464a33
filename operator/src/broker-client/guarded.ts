import { AbortedError } from "../kube/api.ts";
import type { BrokerClient } from "./types.ts";

/**
 * Wraps a BrokerClient so every call belongs to one leadership term: after
 * the term's signal fires (lease lost, shutdown) no call goes out, and calls
 * in flight are aborted. Kubernetes writes have the same guard (guardedApi);
 * without this one a deposed leader could still drain, cancel a drain, start
 * or cancel a move, or delete topic data while the new leader acts.
 */
export function guardedBrokerClient(inner: BrokerClient, term: AbortSignal): BrokerClient {
  const check = (what: string) => {
    if (term.aborted) throw new AbortedError(what);
  };
  const within = (signal: AbortSignal | undefined) =>
    signal === undefined ? term : AbortSignal.any([signal, term]);
  return {
    status: async (ep, signal) => {
      check(`status of broker ${ep.id}`);
      return inner.status(ep, within(signal));
    },
    drain: async (ep, waitMs, signal) => {
      check(`drain broker ${ep.id}`);
      return inner.drain(ep, waitMs, within(signal));
    },
    cancelDrain: async (ep, signal) => {
      check(`cancel the drain of broker ${ep.id}`);
      return inner.cancelDrain(ep, within(signal));
    },
    deleteTopicData: async (ep, topic, signal) => {
      check(`delete topic ${topic}'s data on broker ${ep.id}`);
      return inner.deleteTopicData(ep, topic, within(signal));
    },
    startMove: async (ep, topic, partition, from, signal) => {
      check(`start moving ${topic}/${partition} to broker ${ep.id}`);
      return inner.startMove(ep, topic, partition, from, within(signal));
    },
    getMove: async (ep, topic, partition, signal) => {
      check(`read the move of ${topic}/${partition} on broker ${ep.id}`);
      return inner.getMove(ep, topic, partition, within(signal));
    },
    cancelMove: async (ep, topic, partition, signal) => {
      check(`cancel the move of ${topic}/${partition} on broker ${ep.id}`);
      return inner.cancelMove(ep, topic, partition, within(signal));
    },
  };
}
