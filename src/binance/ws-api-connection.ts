import type { Context } from "hono";
import { openEdgeConnection } from "../access/edge-connection";
import type { AppEnv } from "../env";
import { MAX_CONNECTIONS_PER_PRINCIPAL } from "../streams/protocol";
import { BinanceError } from "./errors";
import { answerFrame, rateLimitsOf, readRequest } from "./ws-api";

/** The app itself: each request of a connection is answered by the REST dialect's route. */
export type DialectFetch = (request: Request) => Promise<Response>;

/** Requests a connection may have waiting for their answer; one more is refused (-1003) rather than queued. */
export const MAX_WAITING_REQUESTS = 50;

/**
 * `GET /binance/ws-api/v3` (docs/binance.md#websocket-api): the connection is held by this
 * isolate (request/response needs no shard: nothing is pushed to it), counted against the
 * client address's five connections with its streams by a lease of its guard, which it confirms
 * every 20 s and returns on close. Each request is the REST dialect's endpoint asked as a request
 * from the same address (`dispatch`): the same answer, the same reads and edge copies, counted
 * once against the address's 10 a second — in object calls, what the REST request costs (none
 * when the edge copy is fresh), plus one guard call per connection every 20 s.
 *
 * Answers go in the order the requests came. Public only: a connection is its address's, so there
 * is no key whose rights could end while it is open.
 */
export async function wsApiUpgrade(c: Context<AppEnv>, dispatch: DialectFetch): Promise<Response> {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket")
    throw new BinanceError("INVALID_PARAMETER", "This is a WebSocket endpoint: connect with Upgrade: websocket.");
  const connection = await openEdgeConnection(c);
  if (!connection) {
    throw new BinanceError(
      "TOO_MANY_REQUESTS",
      `Too many connections: ${MAX_CONNECTIONS_PER_PRINCIPAL} per client address, streams and WebSocket API together (docs/limits.md#stream-connections).`,
    );
  }
  const url = new URL(c.req.url);
  const rateLimitsByDefault = url.searchParams.get("returnRateLimits") !== "false";
  const address = c.req.header("CF-Connecting-IP");
  const { client, server } = connection;

  let waiting = 0;
  let turn: Promise<void> = Promise.resolve();
  const answer = async (text: string): Promise<string> => {
    const request = readRequest(text);
    if ("error" in request) return answerFrame(request.id, request.error.status, { code: request.error.code, msg: request.error.msg }, undefined);
    const query = request.query.toString();
    const response = await dispatch(
      new Request(`${url.origin}/binance/api/v3/${request.path}${query ? `?${query}` : ""}`, {
        headers: address ? { "CF-Connecting-IP": address } : {},
      }),
    );
    const body = await response.json().catch(() => ({ code: -1000, msg: "An unknown error occurred while processing the request." }));
    return answerFrame(request.id, response.status, body, (request.returnRateLimits ?? rateLimitsByDefault) ? rateLimitsOf(response.headers) : undefined);
  };
  server.addEventListener("message", (event) => {
    const text = typeof event.data === "string" ? event.data : "";
    if (waiting >= MAX_WAITING_REQUESTS) {
      server.send(
        answerFrame(null, 429, { code: -1003, msg: `More than ${MAX_WAITING_REQUESTS} requests wait for their answers on this connection.` }, undefined),
      );
      return;
    }
    waiting += 1;
    // One after another: answers keep the requests' order.
    turn = turn.then(async () => {
      try {
        const frame = await answer(text);
        if (!connection.ended) server.send(frame);
      } catch (error) {
        console.error(JSON.stringify({ level: "error", message: "ws-api request failed", error: String(error) }));
        if (!connection.ended)
          server.send(answerFrame(null, 503, { code: -1001, msg: "Internal error; unable to process your request. Please try again." }, undefined));
      } finally {
        waiting -= 1;
      }
    });
  });
  server.addEventListener("close", () => {
    try {
      server.close(1000);
    } catch {
      // already closed
    }
  });
  return new Response(null, { status: 101, webSocket: client });
}
