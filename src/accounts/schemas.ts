import { z } from "@hono/zod-openapi";
import { isValidCidr } from "../access/client-address";
import { ACCOUNT_PERMISSIONS } from "../access/keys";
import { queryInt } from "../core/schemas";
import { MAX_PASSWORD_LENGTH } from "./passwords";

export const Credentials = z
  .object({
    email: z.email().max(254).openapi({ example: "ada@example.com" }),
    // The policy (length, guessability) is checked with its own clear message on sign-up.
    password: z.string().max(MAX_PASSWORD_LENGTH, `a password is at most ${MAX_PASSWORD_LENGTH} characters`).openapi({ example: "correct horse battery" }),
  })
  .openapi("Credentials");

export const AccountSchema = z.object({ id: z.string(), email: z.string(), createdAt: z.number().int().optional() }).openapi("Account");

export const Cidr = z
  .string()
  .max(64)
  .refine((text) => isValidCidr(text), "must be an IPv4 or IPv6 address or CIDR range, e.g. 203.0.113.0/24 or 2001:db8::/32");

export const NewKeySchema = z
  .object({
    label: z.string().trim().min(1).max(64).openapi({ example: "trading bot" }),
    permissions: z
      .array(
        z.enum(ACCOUNT_PERMISSIONS, {
          error: "must be read or stream: publishing keys are issued by the operator (docs/publishing.md#publish-keys)",
        }),
      )
      .min(1)
      .max(2)
      .openapi({ example: ["read", "stream"] }),
    allowCidrs: z
      .array(Cidr)
      .max(32)
      .default([])
      .openapi({ example: ["203.0.113.0/24"], description: "Empty: any IP" }),
    expiresAt: z.number().int().positive().nullable().default(null).openapi({ description: "Unix ms; null: never" }),
  })
  .openapi("NewApiKey");

export const ApiKeySchema = z
  .object({
    id: z.string().openapi({ example: "mk_0123456789abcdef01234567" }),
    label: z.string(),
    permissions: z.array(z.enum(ACCOUNT_PERMISSIONS)),
    allowCidrs: z.array(z.string()),
    expiresAt: z.number().int().nullable(),
    createdAt: z.number().int(),
    lastUsedAt: z.number().int().nullable(),
    status: z.enum(["active", "revoked", "expired"]),
  })
  .openapi("ApiKey");

export const CreatedKeySchema = ApiKeySchema.extend({
  secret: z.string().openapi({ description: "Shown exactly once. Sign requests with it; it cannot be retrieved again." }),
}).openapi("CreatedApiKey");

export const KeyIdParam = z.object({
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "mk_0123456789abcdef01234567" }),
});

export const UsageQuery = z.object({
  interval: z.enum(["1m", "1h"]).default("1m").openapi({ description: "1m: per minute, the last 24 h; 1h: per hour, the last 30 days" }),
  since: queryInt(0, 8_640_000_000_000_000).openapi({ description: "Unix ms: buckets that end after it (all kept ones when left out)" }),
});

export const UsageSchema = z
  .object({
    keyId: z.string().openapi({ example: "mk_0123456789abcdef01234567" }),
    interval: z.enum(["1m", "1h"]),
    buckets: z.array(
      z.object({
        start: z.number().int().openapi({ description: "Unix ms: the minute or hour it counts" }),
        requests: z.number().int().openapi({ description: "Signed requests of the key that reached its limit, refused ones included" }),
        rateLimited: z.number().int().openapi({ description: "Of them, refused with 429" }),
      }),
    ),
  })
  .openapi("KeyUsage");
