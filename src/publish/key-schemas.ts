import { z } from "@hono/zod-openapi";
import { Cidr } from "../accounts/schemas";

/** Publishing keys' shapes (docs/operations.md#publish-keys): the routes validate with them, the service answers in them. */

/** Up to the registry's size: a key for a whole venue is `"*"`, not a list of every symbol. */
const MAX_GRANTED_MARKETS = 2_000;

export const Markets = z
  .union([z.literal("*"), z.array(z.string().min(1).max(32)).min(1).max(MAX_GRANTED_MARKETS)])
  .openapi({ example: ["ADAUSDT"], description: 'Symbols the key may publish (any accepted spelling; answered canonical), or "*" for every market' });
export const AllowIps = z
  .array(Cidr)
  .max(32)
  .openapi({ example: ["203.0.113.0/24"], description: "Addresses or CIDR ranges the key may publish from; empty: any" });
export const ExpiresAt = z.number().int().positive().nullable().openapi({ description: "Unix ms; null: never" });

export const PublishKeySchema = z
  .object({
    id: z.string().openapi({ example: "pk_0123456789abcdef01234567" }),
    label: z.string(),
    markets: Markets,
    allowIps: z.array(z.string()),
    expiresAt: z.number().int().nullable(),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
    revokedAt: z.number().int().nullable(),
    lastUsedAt: z.number().int().nullable(),
    status: z.enum(["active", "revoked", "expired"]),
  })
  .openapi("PublishKey");

export type PublishKeyView = z.infer<typeof PublishKeySchema>;
