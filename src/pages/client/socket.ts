/**
 * A WebSocket to `/api/ws` that reconnects with exponential back-off (1 s doubling to 30 s,
 * with jitter) and resubscribes its streams after every reconnect.
 */
export type ConnectionState = "connecting" | "live" | "reconnecting";

export class LiveSocket {
  socket: WebSocket | undefined;
  private attempt = 0;
  private nextId = 1;

  constructor(
    private readonly streams: string[],
    // biome-ignore lint/suspicious/noExplicitAny: server messages are untyped JSON; each page narrows what it reads
    private readonly onMessage: (message: any) => void,
    private readonly onState: (state: ConnectionState) => void,
  ) {
    this.open();
  }

  private open(): void {
    this.onState(this.attempt === 0 ? "connecting" : "reconnecting");
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/ws`;
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.onopen = () => {
      this.attempt = 0;
      this.onState("live");
      this.send({ op: "subscribe", streams: this.streams });
    };
    socket.onmessage = (event) => this.onMessage(JSON.parse(event.data as string));
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.attempt += 1;
      this.onState("reconnecting");
      const delay = Math.min(30_000, 1000 * 2 ** (this.attempt - 1)) * (0.75 + Math.random() * 0.5);
      setTimeout(() => this.open(), delay);
    };
  }

  send(message: Record<string, unknown>): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify({ id: this.nextId++, ...message }));
  }

  /** Asks for a fresh snapshot of a book after a gap. */
  resubscribe(stream: string): void {
    this.send({ op: "unsubscribe", streams: [stream] });
    this.send({ op: "subscribe", streams: [stream] });
  }
}
