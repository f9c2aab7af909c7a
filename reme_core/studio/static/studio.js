// reme studio: behaviour shared by every page. No inline scripts anywhere (the CSP forbids
// them); pages add their own files (editor.js, graph.js).
(function () {
  "use strict";

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // Every htmx request carries the session's CSRF token; plain forms carry it as a field.
  document.addEventListener("htmx:configRequest", function (event) {
    event.detail.headers["X-CSRF-Token"] = csrfToken();
  });

  // Show an error panel (4xx/5xx) in place instead of silently doing nothing.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if (status >= 400 && status !== 401) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    // The workspace picker switches at once when scripts run (its Go button is the fallback).
    document.querySelectorAll("select.autosubmit").forEach(function (select) {
      select.addEventListener("change", function () { select.form.submit(); });
    });
    // On a phone, a note gets the screen: fold the folder tree above it.
    var tree = document.querySelector(".tree-toggle");
    if (tree && document.querySelector(".note") &&
        window.matchMedia("(max-width: 760px)").matches) {
      tree.open = false;
    }
  });
})();
