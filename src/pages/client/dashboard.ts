/**
 * The dashboard's copy button for a new key's secret. Without JavaScript the secret stays
 * selectable; outside a secure context there is no `navigator.clipboard`, so it falls back to
 * selecting the secret and the legacy copy command.
 */
const button = document.getElementById("copy-secret");
button?.addEventListener("click", () => {
  const secret = button.getAttribute("data-secret") ?? "";
  const done = (ok: boolean) => {
    button.textContent = ok ? "Copied" : "Select and copy the secret above";
  };
  const fallback = () => {
    const range = document.createRange();
    range.selectNodeContents(document.getElementById("secret-value")!);
    const selection = window.getSelection()!;
    selection.removeAllRanges();
    selection.addRange(range);
    try {
      done(document.execCommand("copy"));
    } catch {
      done(false);
    }
  };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(secret).then(() => done(true), fallback);
  else fallback();
});
