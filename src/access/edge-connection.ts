import type { Context } from "hono";
import { accessGuard } from "../core/object-ids";
import type { AppEnv } from "../http/env";
import { MAX_CONNECTIONS_PER_PRINCIPAL } from "../streams/protocol";
import { clientPrincipal } from "./client-address";
import { EDGE_CONFIRM_MS, EDGE_HOLDER } from "./connection-leases";

/** A WebSocket this isolate holds for a client address (the Binance WebSocket API, a replay). */
export interface EdgeConnection {
  /** The client's end, for the 101 answer. */
  client: WebSocket;
  /** This isolate's end, accepted. */
  server: WebSocket;
  /** Whether the connection has ended (closed by either side, or failed). */
  readonly ended: boolean;
  /** Ends it here: the lease is returned (also on the client's close or an error). */
  end(): void;
}

/**
 * Opens a WebSocket held by this isolate, counted as one of the client address's five
 * connections (streams, Binance WebSocket API and replays together) by a lease of its guard:
 * one guard call to take it, one every 20 s to confirm it, one to return it when it ends.
 * Undefined when the address holds all five: the caller refuses the upgrade in its own words.
 *
 * @example
 * const connection = await openEdgeConnection(c);
 * if (!connection) throw problem("STREAM_LIMIT", "at most 5 connections per client address");
 * connection.server.send("hello");
 * return new Response(null, { status: 101, webSocket: connection.client });
 */
export async function openEdgeConnection(c: Context<AppEnv>): Promise<EdgeConnection | undefined> {
  const guard = accessGuard(c.env, clientPrincipal(c.req.raw));
  const lease = crypto.randomUUID();
  if (!(await guard.takeConnection(lease, EDGE_HOLDER, MAX_CONNECTIONS_PER_PRINCIPAL))) return undefined;
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  server.accept();
  const confirm = setInterval(() => void guard.confirmConnection(lease).catch(() => undefined), EDGE_CONFIRM_MS);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(confirm);
    c.executionCtx.waitUntil(guard.returnConnection(lease).catch(() => undefined));
  };
  server.addEventListener("close", end);
  server.addEventListener("error", end);
  return {
    client,
    server,
    get ended() {
      return ended;
    },
    end,
  };
}
