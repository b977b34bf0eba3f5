import { z } from "@hono/zod-openapi";
import { objectCalls } from "../core/object-ids";
import { createdJson, jsonBody, okJson, problemResponses, queryIntOr } from "../core/schemas";
import { createRouter } from "../http/router";
import {
  approveGateway,
  GATEWAY_ID_PATTERN,
  GATEWAY_ID_RULE,
  listGateways,
  readGateway,
  retireSecret,
  revokeGateway,
  rotateSecret,
} from "../settlements/gateways";
import { listSettlements, readSettlement } from "../settlements/queries";
import { CurrentStatusSchema, EventSchema, SettlementSchema, TransitionSchema } from "../settlements/schemas";
import { auditOf, operatorListing, operatorRemoval, operatorRoute } from "./auth";

/** The isolate's call counters (`objectCalls`), one integer each: the schema follows the counters, never a copy of their names. */
const ObjectCallsSchema = z.object(
  Object.fromEntries(Object.keys(objectCalls).map((name) => [name, z.number().int()])) as Record<keyof typeof objectCalls, z.ZodNumber>,
);
const SecretSchema = z.object({ id: z.string(), status: z.enum(["active", "retired"]), createdAt: z.number().int(), retiredAt: z.number().int().nullable() });
const GatewaySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    status: z.enum(["active", "revoked"]),
    createdAt: z.number().int(),
    revokedAt: z.number().int().nullable(),
    secrets: z.array(SecretSchema),
  })
  .openapi("Gateway");
const NewSecretSchema = z
  .object({ id: z.string(), secret: z.string().openapi({ example: "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3", description: "Shown once" }) })
  .openapi("GatewaySecret");
const GatewayParam = z.object({
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, example: "gw_0123456789abcdef" }),
});
const SecretParams = GatewayParam.extend({
  secretId: z
    .string()
    .max(64)
    .openapi({ param: { name: "secretId", in: "path" } }),
});

export const adminRoutes = createRouter()
  .openapi(
    operatorRoute("post", "/gateways", {
      operationId: "approveGateway",
      summary: "Approve a gateway; its whsec_ secret is in this answer only",
      description: `An operator may choose the gateway's id (${GATEWAY_ID_RULE}); without one the service assigns gw_ and 16 hex digits. An id in use is 409 ALREADY_EXISTS. Unknown fields are refused.`,
      request: jsonBody(
        z
          .object({
            name: z.string().trim().min(1).max(100).openapi({ example: "Acme Chain Gateway" }),
            id: z.string().regex(GATEWAY_ID_PATTERN, GATEWAY_ID_RULE).optional().openapi({ example: "gw_acme" }),
          })
          .strict(),
      ),
      responses: { ...createdJson(GatewaySchema.extend({ secret: NewSecretSchema }), "Approved"), ...problemResponses(400, 401, 409, 413, 415, 429, 503) },
    }),
    async (c) => {
      const { name, id } = c.req.valid("json");
      return c.json(await approveGateway(c.env, name, id, auditOf(c)), 201);
    },
  )
  .openapi(...operatorListing("/gateways", { gateways: GatewaySchema }, "List gateways (never their secrets)", listGateways))
  .openapi(
    operatorRoute("get", "/gateways/{id}", {
      operationId: "getGateway",
      summary: "One gateway",
      request: { params: GatewayParam },
      responses: { ...okJson(GatewaySchema, "Gateway"), ...problemResponses(401, 404, 429, 503) },
    }),
    async (c) => c.json(await readGateway(c.env, c.req.valid("param").id), 200),
  )
  .openapi(
    operatorRoute("post", "/gateways/{id}/secrets", {
      operationId: "rotateGatewaySecret",
      summary: "Rotate: add a second active secret (at most two); retire the old one when the gateway has switched",
      request: { params: GatewayParam },
      responses: { ...createdJson(NewSecretSchema, "The new secret, shown once"), ...problemResponses(400, 401, 404, 429, 503) },
    }),
    async (c) => c.json(await rotateSecret(c.env, c.req.valid("param").id, auditOf(c)), 201),
  )
  .openapi(
    ...operatorRemoval(
      "/gateways/{id}/secrets/{secretId}",
      SecretParams,
      { operationId: "retireGatewaySecret", summary: "Retire a secret", removed: "Retired" },
      (c, p) => retireSecret(c.env, p.id, p.secretId, auditOf(c)),
    ),
  )
  .openapi(
    ...operatorRemoval(
      "/gateways/{id}",
      GatewayParam,
      { operationId: "revokeGateway", summary: "Revoke a gateway: its callbacks are refused from now on", removed: "Revoked" },
      (c, p) => revokeGateway(c.env, p.id, auditOf(c)),
    ),
  )
  .openapi(
    operatorRoute("get", "/settlements", {
      operationId: "listSettlements",
      summary: "Settlements, newest first, with cursor pagination",
      request: {
        query: z.object({
          status: CurrentStatusSchema.optional(),
          gatewayId: z.string().max(64).optional(),
          limit: queryIntOr(1, 200, 50).openapi({ description: "1–200, default 50" }),
          cursor: z.string().max(512).optional().openapi({ description: "nextCursor of the previous page" }),
        }),
      },
      responses: {
        ...okJson(z.object({ data: z.array(SettlementSchema), nextCursor: z.string().nullable() }), "A page"),
        ...problemResponses(400, 401, 429, 503),
      },
    }),
    async (c) => c.json(await listSettlements(c.env.DB, c.req.valid("query")), 200),
  )
  .openapi(
    operatorRoute("get", "/gateways/{id}/settlements/{settlementId}", {
      operationId: "getSettlement",
      summary: "One gateway's settlement, with its append-only transition history and every event received for it",
      description: "Settlement ids belong to the gateway that reports them, so a settlement is named by its gateway and its id together.",
      request: {
        params: GatewayParam.extend({
          settlementId: z
            .string()
            .max(128)
            .openapi({ param: { name: "settlementId", in: "path" }, example: "stl_42" }),
        }),
      },
      responses: {
        ...okJson(z.object({ settlement: SettlementSchema, history: z.array(TransitionSchema), events: z.array(EventSchema) }), "Settlement"),
        ...problemResponses(400, 401, 404, 429, 503),
      },
    }),
    async (c) => {
      const { id, settlementId } = c.req.valid("param");
      return c.json(await readSettlement(c.env.DB, id, settlementId), 200);
    },
  )
  .openapi(
    operatorRoute("get", "/isolate", {
      operationId: "getIsolateCounters",
      summary: "This isolate's Durable Object call counters (what the edge read path saves, counted)",
      description:
        "Counters since the isolate started: calls to market objects (`market`, of which `marketReads` by the read path and `ingest` the ingest batches), to access guards (`guard`), to address gates (`gate`, of which `gateReads` carried a market read), to the price index (`priceIndex`, of which `venueReads` by the all-market reads), to stream shards (`shard`), to the registry (`registry`), to the Metrics object (`metrics`) and to the keys' usage ledgers (`usageLedger`). Another request may land in another isolate; locally every object runs in the one isolate, so `npm run bench` reads the calls into the shared objects here too.",
      responses: {
        ...okJson(
          z.object({
            objectCalls: ObjectCallsSchema,
          }),
          "Counters",
        ),
        ...problemResponses(401, 429, 503),
      },
    }),
    (c) => c.json({ objectCalls: { ...objectCalls } }, 200),
  );
