// The partitioner lives in the @narad/wire package (packages/wire), which the
// client shares with the broker; this module keeps the broker's import path.
export * from "../../../packages/wire/src/partitioner.ts";
