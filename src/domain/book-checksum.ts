/**
 * The order book checksum (docs/streams.md#checksums) is defined once, in the client package, so
 * the service and every client compute it with the same function; test/support/checksum.ts
 * checks both independently.
 */
export { bookChecksum, CHECKSUM_DEPTH, crc32 } from "../../client/src/checksum";
