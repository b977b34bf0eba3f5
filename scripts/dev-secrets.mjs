// Generates `.dev.vars` (git-ignored) with fresh local secrets on the first start, so local
// development never runs on a default or committed secret. Existing values are kept.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const SECRETS = {
  // Seals API key secrets and gateway secrets at rest (AES-256-GCM), base64 of 32 bytes.
  SEALING_KEY: () => randomBytes(32).toString("base64"),
  // Bearer token of the operator API.
  ADMIN_TOKEN: () => randomBytes(24).toString("base64url"),
};

export function ensureDevSecrets(path = ".dev.vars") {
  const text = existsSync(path) ? readFileSync(path, "utf8") : "";
  const present = new Set(text.split("\n").map((line) => line.split("=")[0]?.trim()));
  const missing = Object.entries(SECRETS).filter(([name]) => !present.has(name));
  if (missing.length === 0) return false;
  const lines = missing.map(([name, make]) => `${name}="${make()}"`);
  const prefix = text === "" ? "# Local development secrets, generated on first start. Never commit this file.\n" : text.endsWith("\n") ? "" : "\n";
  writeFileSync(path, `${text + prefix + lines.join("\n")}\n`, { mode: 0o600 });
  return true;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(ensureDevSecrets() ? "wrote new secrets to .dev.vars" : ".dev.vars already has every secret");
}
