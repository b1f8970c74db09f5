// Loaded in <head> (blocking, tiny) so the page never flashes the wrong theme:
// a choice the user made with the header toggle (localStorage) wins over the
// system setting (prefers-color-scheme), which console.css follows otherwise.
(function () {
  "use strict";
  try {
    var theme = window.localStorage.getItem("console-theme");
    if (theme === "dark" || theme === "light") document.documentElement.setAttribute("data-theme", theme);
  } catch (e) { /* storage blocked: follow the system setting */ }
})();
