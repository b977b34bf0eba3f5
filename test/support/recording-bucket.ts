/**
 * The real R2 binding, passed through, with the storage class each put and multipart upload asked
 * for kept by key: the local runtime stores every object as Standard whatever it is asked, so a
 * test reads the request (R2's `storageClass` option) here.
 */
export function recordingBucket(bucket: R2Bucket): { bucket: R2Bucket; classes: Map<string, string> } {
  const classes = new Map<string, string>();
  const recorded = new Proxy(bucket, {
    get(target, property) {
      if (property === "put")
        return (key: string, value: Parameters<R2Bucket["put"]>[1], options?: R2PutOptions) => {
          classes.set(key, options?.storageClass ?? "Standard");
          return target.put(key, value, options);
        };
      if (property === "createMultipartUpload")
        return (key: string, options?: R2MultipartOptions) => {
          classes.set(key, options?.storageClass ?? "Standard");
          return target.createMultipartUpload(key, options);
        };
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { bucket: recorded, classes };
}
