// `npm start`'s HTTPS door for local clients that speak only HTTPS (tardis-dev downloads with
// node:https): a self-signed certificate made on the first start (git-ignored, like .dev.vars)
// and a proxy on HTTPS_PORT (PORT + 1 unless set) to the service. Deployed, Cloudflare serves HTTPS.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import path from "node:path";
import selfsigned from "selfsigned";

/** The local certificate's directory (git-ignored); `cert.pem` is what a client trusts (NODE_EXTRA_CA_CERTS). */
export const TLS_DIR = path.resolve(import.meta.dirname, "..", ".dev-tls");
export const CERT_PATH = path.join(TLS_DIR, "cert.pem");

/** The local key and certificate for 127.0.0.1 and localhost, made on the first start. @returns {Promise<{ key: string, cert: string }>} */
export async function ensureDevCertificate() {
  const keyPath = path.join(TLS_DIR, "key.pem");
  if (!existsSync(keyPath) || !existsSync(CERT_PATH)) {
    const notAfterDate = new Date(Date.now() + 800 * 86_400_000);
    const pems = await selfsigned.generate([{ name: "commonName", value: "127.0.0.1" }], {
      keyType: "ec",
      algorithm: "sha256",
      notAfterDate,
      extensions: [
        { name: "basicConstraints", cA: false },
        {
          name: "subjectAltName",
          altNames: [
            { type: 7, ip: "127.0.0.1" },
            { type: 2, value: "localhost" },
          ],
        },
      ],
    });
    mkdirSync(TLS_DIR, { recursive: true });
    writeFileSync(keyPath, pems.private, { mode: 0o600 });
    writeFileSync(CERT_PATH, pems.cert);
  }
  return { key: readFileSync(keyPath, "utf8"), cert: readFileSync(CERT_PATH, "utf8") };
}

/**
 * Proxies HTTPS on `httpsPort` to the service on `httpPort`, bytes as they are (a gzipped body stays gzipped).
 * @param {number} httpsPort @param {number} httpPort @param {{ key: string, cert: string }} tls
 */
export function startTlsDoor(httpsPort, httpPort, tls) {
  const server = https.createServer(tls, (request, response) => {
    const upstream = http.request(
      { host: "127.0.0.1", port: httpPort, method: request.method, path: request.url, headers: { ...request.headers, "x-forwarded-proto": "https" } },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on("error", () => {
      if (!response.headersSent) response.writeHead(502, { "content-type": "text/plain" });
      response.end("the service did not answer");
    });
    request.pipe(upstream);
  });
  server.on("error", (error) => console.error(`HTTPS door on ${httpsPort} not started: ${error.message}`));
  server.listen(httpsPort, "127.0.0.1");
  return server;
}
