// Small progressive enhancements; every page works without this file.
(function () {
  "use strict";

  // Every word this file shows comes translated from the page (base.html, #console-strings).
  function words(name) {
    var holder = document.getElementById("console-strings");
    return (holder && holder.getAttribute("data-" + name)) || name;
  }

  // Copy buttons for ids.
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button || !navigator.clipboard) return;
    navigator.clipboard.writeText(button.getAttribute("data-copy")).then(function () {
      var label = button.textContent;
      button.textContent = words("copied");
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

  // A poll: what htmx requests on a timer (hx-trigger="every …"): a list's
  // auto-refresh, a job's progress.
  function isPoll(elt) {
    var trigger = elt && elt.getAttribute && elt.getAttribute("hx-trigger");
    return !!trigger && /^\s*every\s/.test(trigger);
  }

  // Polls are not activity: they must not keep an idle session alive
  // (IdleSessionMiddleware reads this header).
  document.addEventListener("htmx:configRequest", function (event) {
    if (isPoll(event.detail.elt)) event.detail.headers["X-Console-Poll"] = "1";
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

  // Back/Forward on a list: the filter form carries hx-history="false", so htmx keeps
  // no DOM snapshot and re-renders the page (form, chips, results) from the URL.
  // A request that would push the URL already shown (Enter in a field that did not
  // change, a second submit) replaces the entry instead: one action, one entry.
  document.addEventListener("htmx:beforeHistoryUpdate", function (event) {
    var update = event.detail.history;
    if (!update || update.type !== "push") return;
    if (new URL(update.path, location.href).href === location.href) update.type = "replace";
  });

  // Auto-refresh never wipes what the user is doing: while rows are selected, an
  // inline cancel form is open, a field has focus or holds text not applied yet,
  // the poll is skipped and the page says so.
  var TEXT_TYPES = /^(text|search|number|email|url|tel|password|date|datetime-local|time|month|week)$/;
  function isTyping(el) {
    if (!el || !el.tagName) return false;
    var tag = el.tagName.toLowerCase();
    if (tag === "textarea" || tag === "select") return true;
    return tag === "input" && TEXT_TYPES.test(el.type || "text");
  }
  function userIsWorking() {
    var listing = document.querySelector(".listing");
    if (!listing) return false;
    if (listing.querySelector("input[name=pick]:checked")) return true;
    if (listing.querySelector(".cancel-row, .inline-cancel")) return true;
    var active = document.activeElement;
    if (active && listing.contains(active) && isTyping(active)) return true;
    var fields = listing.querySelectorAll("input, textarea");
    for (var i = 0; i < fields.length; i++) {
      if (isTyping(fields[i]) && fields[i].value !== fields[i].defaultValue) return true;
    }
    return false;
  }
  function showRefreshState() {
    var note = document.querySelector("[data-auto-refresh]");
    if (!note) return;
    var paused = userIsWorking();
    note.textContent = paused ? words("refresh-paused") : note.getAttribute("data-refresh-text");
    note.classList.toggle("paused", paused);
  }
  // A request the user started (an inline cancel form, a filter, a search) wins over the
  // list's auto-refresh: the poll in flight is aborted, and none starts until theirs is
  // answered, else the poll's rows would land over what theirs brought.
  var userRequests = [];
  function userRequestInFlight() {
    userRequests = userRequests.filter(function (xhr) {
      return xhr.readyState > 0 && xhr.readyState < 4;
    });
    return userRequests.length > 0;
  }
  document.addEventListener("htmx:beforeSend", function (event) {
    if (isPoll(event.detail.elt) || !event.detail.xhr) return;
    userRequests.push(event.detail.xhr);
    var poll = document.querySelector("[data-auto-refresh]");
    if (poll && window.htmx) htmx.trigger(poll, "htmx:abort");
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.hasAttribute || !elt.hasAttribute("data-auto-refresh")) return;
    if (userIsWorking() || userRequestInFlight()) {
      event.preventDefault();
      showRefreshState();
    }
  });
  // Text a filter request sent is applied, not pending any more.
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.detail.elt;
    if (!form || !form.hasAttribute || !form.hasAttribute("data-filter-form")) return;
    if (!event.detail.successful && !(event.detail.xhr && event.detail.xhr.status === 400)) return;
    form.querySelectorAll("input, textarea").forEach(function (field) {
      if (isTyping(field)) field.defaultValue = field.value;
    });
  });
  ["focusin", "focusout", "input", "change", "click", "htmx:afterSettle"].forEach(function (name) {
    document.addEventListener(name, function () { setTimeout(showRefreshState, 0); });
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
    failure(event, words("http-failed").replace("{status}", xhr ? String(xhr.status) : "?"));
  });
  document.addEventListener("htmx:sendError", function (event) {
    failure(event, words("send-failed"));
  });

  // Issue #14, point 9: theme toggle, list keys (j/k/Enter, ?).
  function typingIn(t) {
    var tag = t && t.tagName ? t.tagName.toLowerCase() : "";
    return tag === "input" || tag === "textarea" || tag === "select" || !!(t && t.isContentEditable);
  }

  // Dark mode: the system setting unless the header toggle chose (theme.js applies it early).
  var darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  function currentTheme() {
    var chosen = document.documentElement.getAttribute("data-theme");
    if (chosen === "dark" || chosen === "light") return chosen;
    return darkQuery && darkQuery.matches ? "dark" : "light";
  }
  function showTheme() {
    var dark = currentTheme() === "dark";
    document.querySelectorAll("[data-theme-toggle]").forEach(function (button) {
      button.setAttribute("aria-pressed", dark ? "true" : "false");
      button.textContent = words("dark-mode");
      button.title = words(dark ? "dark-on" : "dark-off");
    });
  }
  document.addEventListener("click", function (event) {
    if (!event.target.closest("[data-theme-toggle]")) return;
    var next = currentTheme() === "dark" ? "light" : "dark";
    document.documentElement.setAttribute("data-theme", next);
    try { window.localStorage.setItem("console-theme", next); } catch (e) { /* not remembered */ }
    showTheme();
  });
  if (darkQuery && darkQuery.addEventListener) darkQuery.addEventListener("change", showTheme);

  // "?" (and the header's Keys button) shows the shortcuts; Escape closes the dialog.
  function keysDialog() { return document.getElementById("keys-dialog"); }
  function openKeys() {
    var dialog = keysDialog();
    if (dialog && !dialog.open && dialog.showModal) dialog.showModal();
  }
  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-keys-open]")) openKeys();
  });

  // j / k move through the list rows (each row's first link); Enter opens that row.
  function listRows() {
    return Array.prototype.filter.call(
      document.querySelectorAll("main table.list tbody tr"),
      function (row) { return row.querySelector("a[href]"); }
    );
  }
  function selectRow(row) {
    document.querySelectorAll("tr.row-selected").forEach(function (old) {
      old.classList.remove("row-selected");
      old.removeAttribute("aria-selected");
    });
    row.classList.add("row-selected");
    if (!row.hasAttribute("tabindex")) row.setAttribute("tabindex", "-1");
    row.focus();
    row.scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typingIn(event.target)) return;
    var dialog = keysDialog();
    if (dialog && dialog.open) return;
    if (event.key === "?") {
      event.preventDefault();
      openKeys();
      return;
    }
    if (event.key === "j" || event.key === "k") {
      var rows = listRows();
      if (!rows.length) return;
      var current = rows.indexOf(document.querySelector("tr.row-selected"));
      var next = current < 0 ? 0 : current + (event.key === "j" ? 1 : -1);
      event.preventDefault();
      selectRow(rows[Math.max(0, Math.min(rows.length - 1, next))]);
      return;
    }
    if (event.key === "Enter") {
      var row = event.target.closest && event.target.closest("tr.row-selected");
      if (!row) return;
      var link = row.querySelector("a[href]");
      if (!link) return;
      event.preventDefault();
      window.location.assign(link.href);
    }
  });

  document.addEventListener("DOMContentLoaded", showTheme);
})();
