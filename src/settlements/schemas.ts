import { z } from "@hono/zod-openapi";
import { DecimalString, TimestampMs } from "../core/schemas";
import { AWAITING, SETTLEMENT_STATUSES } from "./state-machine";

const Id = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.:-]+$/, "letters, digits and _ . : - only");
const Text = z.string().max(128);
/** Amounts: plain decimals, at most 18 decimals (the finest on-chain unit of common assets). */
const Amount = DecimalString.refine((v) => !v.includes(".") || v.split(".")[1]!.length <= 18, "at most 18 decimals");

const SettlementStatusSchema = z.enum(SETTLEMENT_STATUSES);
/** A settlement's current state: a table state, or `awaiting` while only held events are known. */
export const CurrentStatusSchema = z
  .enum([...SETTLEMENT_STATUSES, AWAITING])
  .openapi({ description: "A state of the table, or awaiting: only held events are known so far" });
const ReasonSchema = z
  .enum(["transition", "conflict"])
  .openapi({ description: "Why an event was quarantined: transition (the table forbids the step) or conflict (its sequence already has another event)" });

export const CallbackBodySchema = z
  .object({
    id: Id.openapi({ example: "evt_1", description: "Equals the webhook-id header" }),
    type: z.literal("settlement.updated"),
    gatewayId: Id.openapi({ example: "gw_1" }),
    occurredAt: TimestampMs,
    data: z.object({
      settlementId: Id.openapi({ example: "stl_42" }),
      sequence: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).openapi({ description: "1, 2, 3… per settlement" }),
      status: SettlementStatusSchema,
      chain: z.string().min(1).max(64).openapi({ example: "eip155:1" }),
      asset: z.string().min(1).max(16).openapi({ example: "USDC" }),
      amount: Amount.refine((v) => !v.startsWith("-"), "cannot be negative").openapi({ example: "1250.500000" }),
      fee: Amount.refine((v) => !v.startsWith("-"), "cannot be negative").optional(),
      txHash: Text.optional(),
      blockNumber: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
      confirmations: z.number().int().nonnegative().max(1_000_000_000).optional(),
      requiredConfirmations: z.number().int().nonnegative().max(1_000_000_000).optional(),
      from: Text.optional(),
      to: Text.optional(),
      reference: Text.optional(),
    }),
  })
  .openapi("SettlementCallback");

export type CallbackBody = z.infer<typeof CallbackBodySchema>;

export const CallbackAnswerSchema = z
  .object({
    received: z.literal(true),
    outcome: z.enum(["applied", "duplicate", "stale", "quarantined", "held"]),
    reason: ReasonSchema.optional(),
    settlementId: z.string(),
    status: CurrentStatusSchema,
  })
  .openapi("CallbackAnswer");

export const SettlementSchema = z
  .object({
    id: z.string(),
    gatewayId: z.string(),
    status: CurrentStatusSchema,
    sequence: z.number().int(),
    chain: z.string().nullable(),
    asset: z.string().nullable(),
    amount: z.string().nullable(),
    fee: z.string().nullable(),
    txHash: z.string().nullable(),
    blockNumber: z.number().int().nullable(),
    confirmations: z.number().int().nullable(),
    requiredConfirmations: z.number().int().nullable(),
    from: z.string().nullable(),
    to: z.string().nullable(),
    reference: z.string().nullable(),
    createdAt: TimestampMs,
    updatedAt: TimestampMs,
  })
  .openapi("Settlement");

export const TransitionSchema = z
  .object({
    sequence: z.number().int(),
    from: SettlementStatusSchema.nullable(),
    to: SettlementStatusSchema,
    webhookId: z.string(),
    occurredAt: TimestampMs,
    recordedAt: TimestampMs,
    skipped: z
      .object({ from: z.number().int(), to: z.number().int() })
      .nullable()
      .openapi({ description: "Sequences this step skipped: never delivered while the gap held (SETTLEMENT_GAP_HOLD_MS), then stepped over" }),
  })
  .openapi("SettlementTransition");

export const EventSchema = z
  .object({
    webhookId: z.string(),
    sequence: z.number().int(),
    status: SettlementStatusSchema,
    outcome: z.enum(["applied", "stale", "quarantined", "held"]),
    reason: ReasonSchema.nullable(),
    receivedAt: TimestampMs,
  })
  .openapi("SettlementEvent");
