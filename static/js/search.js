// The header search box as an ARIA combobox (issue #14): Down / Up move through the
// dropdown's results (aria-activedescendant: focus stays in the box), Enter opens the
// chosen one, Escape closes the dropdown. Without this file the box is a plain search
// field: Enter shows the full results page.
(function () {
  "use strict";
  var box = document.getElementById("console-search");
  var dropdown = document.getElementById("search-dropdown");
  if (!box || !dropdown) return;

  box.setAttribute("role", "combobox");
  box.setAttribute("aria-autocomplete", "list");
  box.setAttribute("aria-expanded", "false");

  function options() {
    return Array.prototype.slice.call(dropdown.querySelectorAll('[role="option"]'));
  }
  function current() {
    var id = box.getAttribute("aria-activedescendant");
    return id ? document.getElementById(id) : null;
  }
  function choose(option) {
    options().forEach(function (o) {
      o.setAttribute("aria-selected", "false");
      o.classList.remove("active");
    });
    if (!option) {
      box.removeAttribute("aria-activedescendant");
      return;
    }
    option.setAttribute("aria-selected", "true");
    option.classList.add("active");
    box.setAttribute("aria-activedescendant", option.id);
    option.scrollIntoView({ block: "nearest" });
  }
  // Whenever the dropdown's content changes (htmx swap, closed): expanded or not, nothing chosen.
  function sync() {
    var list = dropdown.querySelector('[role="listbox"]');
    if (list && options().length) {
      box.setAttribute("aria-expanded", "true");
      box.setAttribute("aria-controls", list.id);
    } else {
      box.setAttribute("aria-expanded", "false");
      box.removeAttribute("aria-controls");
    }
    choose(null);
  }
  new MutationObserver(sync).observe(dropdown, { childList: true });

  box.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var all = options();
    var index = all.indexOf(current());
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      if (!all.length) return;
      event.preventDefault();
      if (event.key === "ArrowDown") choose(all[Math.min(index + 1, all.length - 1)]);
      else choose(index > 0 ? all[index - 1] : null); // up from the first: back to the text
    } else if (event.key === "Enter") {
      var chosen = current();
      if (!chosen) return; // the form's own submit: the full results page
      event.preventDefault();
      window.location.assign(chosen.href);
    } else if (event.key === "Escape" && dropdown.innerHTML.trim()) {
      event.preventDefault();
      event.stopPropagation(); // the box keeps focus; a second Escape leaves it (console.js)
      dropdown.innerHTML = "";
    }
  });
  // Typing again starts from the text, not from a result chosen before.
  box.addEventListener("input", function () { choose(null); });
})();
