// @binance/connector ships no types: the parts the tests use.
declare module "@binance/connector" {
  interface Response {
    data: any;
  }
  export class Spot {
    constructor(apiKey: string, apiSecret: string, options: { baseURL: string });
    exchangeInfo(options?: { symbol?: string; symbols?: string[] }): Promise<Response>;
    depth(symbol: string, options?: { limit?: number }): Promise<Response>;
    trades(symbol: string, options?: { limit?: number }): Promise<Response>;
    klines(symbol: string, interval: string, options?: { limit?: number }): Promise<Response>;
    ticker24hr(symbol?: string, symbols?: string[], type?: string): Promise<Response>;
    tickerPrice(symbol?: string, symbols?: string[]): Promise<Response>;
    bookTicker(symbol?: string, symbols?: string[]): Promise<Response>;
    rollingWindowTicker(symbol?: string, symbols?: string[], options?: { windowSize?: string; type?: string }): Promise<Response>;
    /** Any public GET: the connector's own path for endpoints it has no method for. */
    publicRequest(method: "GET", path: string, params?: Record<string, unknown>): Promise<Response>;
  }
  export class WebsocketStream {
    constructor(options: { logger: object; wsURL: string; callbacks: { message: (text: string) => void } });
    diffBookDepth(symbol: string, speed: string): void;
    subscribe(stream: string | string[]): void;
    disconnect(): void;
  }
  export class WebsocketAPI {
    constructor(
      apiKey: string,
      apiSecret: string,
      options: { logger: object; wsURL: string; callbacks: { open?: () => void; message: (text: string) => void } },
    );
    time(): void;
    orderbook(symbol: string, options?: { limit?: number }): void;
    klines(symbol: string, interval: string, options?: { limit?: number }): void;
    trades(symbol: string, options?: { limit?: number }): void;
    ticker24hr(options: { symbol?: string; symbols?: string[] }): void;
    tickerPrice(options: { symbol?: string; symbols?: string[] }): void;
    disconnect(): void;
  }
}
