// Runs first on the pages that play snapshots: counts the script errors into <output id="state"> (data-errors,
// data-last-error), which the Chromium tests read back.
window.addEventListener("error", function (e) {
  const s = document.getElementById("state");
  s.dataset.errors = String(Number(s.dataset.errors) + 1);
  s.dataset.lastError = String(e.message);
});
