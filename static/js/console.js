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

  // "/" anywhere (but in a field) focuses the header search box; Escape closes its dropdown.
  document.addEventListener("keydown", function (event) {
    var box = document.getElementById("console-search");
    if (!box) return;
    if (event.key === "/" && !event.ctrlKey && !event.metaKey && !event.altKey) {
      var t = event.target;
      var tag = t && t.tagName ? t.tagName.toLowerCase() : "";
      if (tag === "input" || tag === "textarea" || tag === "select" || (t && t.isContentEditable)) return;
      event.preventDefault();
      box.focus();
      box.select();
    } else if (event.key === "Escape" && event.target === box) {
      var dropdown = document.getElementById("search-dropdown");
      if (dropdown) dropdown.innerHTML = "";
      box.blur();
    }
  });

  // A click outside the header search box closes its dropdown.
  document.addEventListener("click", function (event) {
    var dropdown = document.getElementById("search-dropdown");
    if (dropdown && dropdown.innerHTML && !event.target.closest(".search-box")) dropdown.innerHTML = "";
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

  // A request that fails shows its message where the user clicked. 4xx answers are
  // the console's own fragments (swapped in by the htmx-config above); a 5xx or a
  // lost connection has no fragment, so say so next to the element that sent it.
  function failure(event, words) {
    var elt = event.detail.elt;
    if (!elt || !elt.closest) return;
    var place = elt.closest("form, tr, .card, section") || elt;
    var old = place.querySelector(":scope > .request-failed");
    if (old) old.remove();
    var note = document.createElement(place.tagName === "TR" ? "td" : "div");
    note.className = "banner banner-error request-failed";
    note.setAttribute("role", "alert");
    if (place.tagName === "TR") note.colSpan = place.children.length || 1;
    note.textContent = words;
    if (place.tagName === "FORM" || place.tagName === "SECTION" || place.classList.contains("card")) {
      place.appendChild(note);
    } else if (place.tagName === "TR") {
      place.appendChild(note);
    } else {
      place.insertAdjacentElement("afterend", note);
    }
  }
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (xhr && xhr.status >= 400 && xhr.status < 500) return; // shown by its own fragment
    failure(event, "The console could not do that (HTTP " + (xhr ? xhr.status : "?") +
      "). Nothing on this page changed: reload it before trying again.");
  });
  document.addEventListener("htmx:sendError", function (event) {
    failure(event, "The console did not answer (the connection failed). Nothing on this " +
      "page changed: check your connection, reload the page, and look at the item before " +
      "trying again.");
  });
})();
