// Small progressive enhancements; every page works without this file.
(function () {
  "use strict";

  // Copy buttons for ids.
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button || !navigator.clipboard) return;
    navigator.clipboard.writeText(button.getAttribute("data-copy")).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1200);
    });
  });

  // "Keep it running" under a list row: drop the inline confirmation row
  // (data-remove-row; no inline handlers, the Content-Security-Policy forbids them).
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-remove-row]");
    if (!button) return;
    var row = button.closest("tr");
    if (row) row.remove();
  });

  // Auto-refresh polls are not activity: they must not keep an idle session alive
  // (IdleSessionMiddleware reads this header).
  document.addEventListener("htmx:configRequest", function (event) {
    var elt = event.detail.elt;
    var trigger = elt && elt.getAttribute && elt.getAttribute("hx-trigger");
    if (trigger && /^\s*every\s/.test(trigger)) event.detail.headers["X-Console-Poll"] = "1";
  });

  // Keep shared URLs short: drop empty filter fields from htmx GETs.
  document.addEventListener("htmx:configRequest", function (event) {
    if (event.detail.verb !== "get") return;
    var params = event.detail.parameters;
    Object.keys(params).forEach(function (key) {
      var value = params[key];
      if (value === "" || (Array.isArray(value) && value.every(function (v) { return v === ""; }))) {
        delete params[key];
      }
    });
  });
})();
