import type { CarriedRefresh, MarketAnswer, MarketQuestion, ReadCarrier } from "../domain/market-answer";
import type { MarketConfig } from "../domain/market-config";
import type { Admission } from "./sliding-window";

/** The two ways a ticket's admission is decided: a plain call, or one carrying a market question. */
export interface TicketCalls {
  plain(): Promise<Admission>;
  /** The admission and the market's answer, in one call. */
  carried(market: MarketConfig, question: MarketQuestion): { admission: Promise<Admission>; answer: Promise<MarketAnswer> };
}

/**
 * A plain read's admission, decided once (docs/limits.md#address-gates, #key-gates): by the read's
 * first market refresh, which asks its market through the address's or the key's gate in the same
 * call that counts the limit, or — when the read refreshes nothing, or another read of the request
 * already carried it — by a plain call to the gate when the route is done. Either way one call
 * decides it, and a refresh that carries it is not a call of its own.
 *
 * @example
 * const ticket = new AdmissionTicket({
 *   plain: () => admit(c.env, principal, 10, detail),
 *   carried: (market, question) => admitReading(c.env, principal, 10, detail, market, question),
 * });
 * c.set("readCarrier", ticket);
 * await next().finally(() => ticket.decide());
 * await ticket.admission;
 */
export class AdmissionTicket implements ReadCarrier {
  /** The admission, or its 429 / 503 once decided. */
  readonly admission: Promise<Admission>;
  private settle!: (admission: Promise<Admission>) => void;
  /** `taken` by a refresh that has not yet asked its market; `decided` once a call is made. */
  private state: "open" | "taken" | "decided" = "open";

  constructor(private readonly calls: TicketCalls) {
    this.admission = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  take(): CarriedRefresh | undefined {
    if (this.state !== "open") return undefined;
    this.state = "taken";
    return {
      carry: (market, question, direct) => this.carry(market, question, direct),
      release: () => {
        if (this.state === "taken") this.plain();
      },
    };
  }

  /** The route is done: decided by itself unless a refresh has taken it (that refresh decides it). */
  decide(): void {
    if (this.state === "open") this.plain();
  }

  private plain(): void {
    this.state = "decided";
    this.settle(this.calls.plain());
  }

  private carry(market: MarketConfig, question: MarketQuestion, direct: () => Promise<MarketAnswer>): Promise<MarketAnswer> {
    if (this.state !== "taken") return direct();
    this.state = "decided";
    const { admission, answer } = this.calls.carried(market, question);
    this.settle(admission);
    return answer;
  }
}
