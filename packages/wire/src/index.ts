// @narad/wire: what the Narad broker and its clients must agree on byte for
// byte: the binary produce-batch format and the key partitioner.

export {
  type BatchEntry,
  type BatchErrors,
  BatchFormatError,
  type BatchLimits,
  batchContentTypes,
  batchMaxKeyBytes,
  type DecodedBatchEntry,
  decodeBinaryBatch,
  encodeBinaryBatch,
  encodedBatchBytes,
} from "./batch.ts";
export {
  choosePartition,
  createRotator,
  fnv1a32,
  generateKey,
  type PartitionChoice,
  partitionForKey,
  type Rotator,
} from "./partitioner.ts";
