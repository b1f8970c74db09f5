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
