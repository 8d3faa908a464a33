// The Narad client library: `new NaradClient({ url })`, then topics.*,
// produce/replay/read, client.producer(topic) (batching, backpressure,
// retries) and client.consumer(topic) (queue consume with leases).

export { NaradClient, type NaradClientOptions, type ProduceOptions } from "./client.ts";
export {
  Consumer,
  type ConsumerOptions,
  type Handler,
  type ReceivedMessage,
  type RunOptions,
} from "./consumer.ts";
export {
  BadRequestError,
  BufferFullError,
  ClosedError,
  DeliveryInDoubtError,
  DeliveryTimeoutError,
  FencedProducerError,
  ForbiddenError,
  NaradError,
  type NaradErrorCode,
  OffsetExpiredError,
  OutOfOrderSequenceError,
  PayloadTooLargeError,
  StaleReceiptError,
  TopicExistsError,
  TopicNotFoundError,
  UnauthenticatedError,
  UnavailableError,
  UnknownProducerIdError,
} from "./errors.ts";
export {
  type Delivery,
  Producer,
  type ProducerMetrics,
  type ProducerOptions,
  type SendOptions,
  type Sent,
} from "./producer.ts";
export type { ClientAuth, ClientTls } from "./transport.ts";
export type {
  GroupInfo,
  GroupSeekResult,
  GroupSeekTarget,
  Message,
  NodeStatus,
  PartitionStats,
  ReadResult,
  Topic,
  TopicInfo,
  TopicPatch,
  TopicSettings,
} from "./types.ts";
