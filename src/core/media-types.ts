/** What a request's body is, by its `Content-Type` (parameters such as `charset` allowed). */

/** A JSON body: `application/json`. */
export function isJsonRequest(request: Request): boolean {
  return /^application\/json\s*(;|$)/i.test(request.headers.get("Content-Type") ?? "");
}

/** A CSV body: `text/csv` (Binance's public-data files). */
export function isCsvRequest(request: Request): boolean {
  return /^text\/csv\s*(;|$)/i.test(request.headers.get("Content-Type") ?? "");
}

/** An HTML form's body: `application/x-www-form-urlencoded` or `multipart/form-data`. */
export function isFormRequest(request: Request): boolean {
  return /^(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i.test(request.headers.get("Content-Type") ?? "");
}
