// The console's own behaviour: select-all checkboxes and the review queue's keyboard triage.
(function () {
  "use strict";

  document.addEventListener("change", function (event) {
    var name = event.target.getAttribute("data-select-all");
    if (!name) return;
    var form = event.target.form;
    form.querySelectorAll('input[type=checkbox][name="' + name + '"]').forEach(function (box) {
      box.checked = event.target.checked;
    });
  });

  // Inline handlers would break the Content-Security-Policy: these two are attributes instead.
  document.addEventListener("click", function (event) {
    if (event.target.hasAttribute && event.target.hasAttribute("data-select-on-click")) event.target.select();
  });
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });

  // Filter forms leave their empty fields out of the URL, so a shared link says only what is set.
  document.addEventListener("htmx:configRequest", function (event) {
    if (event.detail.verb !== "get" || !event.detail.elt.hasAttribute("data-drop-empty")) return;
    var parameters = event.detail.parameters;
    Array.from(parameters.entries()).forEach(function (entry) {
      if (entry[1] === "") parameters.delete(entry[0]);
    });
  });

  // An upload's progress (Export & import): the form's bar fills as the file is sent. htmx
  // reports the answer's download with the same event, after the upload's loadend: not shown.
  function uploadBar(element) {
    return element.querySelector ? element.querySelector("progress[data-upload-progress]") : null;
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    if (uploadBar(event.target)) event.target.setAttribute("data-uploading", "");
  });
  document.addEventListener("htmx:xhr:loadend", function (event) {
    if (event.target.removeAttribute) event.target.removeAttribute("data-uploading");
  });
  document.addEventListener("htmx:xhr:progress", function (event) {
    var bar = uploadBar(event.target);
    if (!bar || !event.target.hasAttribute("data-uploading") || !event.detail.lengthComputable) return;
    bar.hidden = false;
    bar.max = event.detail.total;
    bar.value = event.detail.loaded;
  });

  // Review queue: j / k move between items, a approves, r jumps to the reason field, Enter in
  // it rejects. Keys typed into a field are left alone.
  function items() { return Array.prototype.slice.call(document.querySelectorAll("[data-review-queue] .review-item")); }
  function current() {
    var list = items();
    var focused = document.activeElement && document.activeElement.closest(".review-item");
    return focused || list[0] || null;
  }
  function move(step) {
    var list = items(), at = list.indexOf(current());
    var next = list[Math.min(Math.max(at + step, 0), list.length - 1)];
    if (next) next.focus();
  }

  document.addEventListener("keydown", function (event) {
    if (!document.querySelector("[data-review-queue]")) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target.matches("input, textarea, select")) {
      if (event.key === "Escape") target.closest(".review-item").focus();
      return;
    }
    if (event.key === "j") { move(1); event.preventDefault(); return; }
    if (event.key === "k") { move(-1); event.preventDefault(); return; }
    // Decisions act only on the item that visibly has the focus.
    var item = document.activeElement && document.activeElement.closest(".review-item");
    var control = item && item.querySelector(event.key === "a" ? "[data-key=approve]" : "[data-key=reason]");
    if (!control || (event.key !== "a" && event.key !== "r")) return;
    event.preventDefault();
    if (event.key === "a") control.click(); else control.focus();
  });

  // The queue opens with its first item focused, ready for triage.
  document.addEventListener("DOMContentLoaded", function () {
    var first = items()[0];
    if (first) first.focus();
  });

  // After an item leaves the queue, the next one takes the focus.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var item = event.detail.target && event.detail.target.closest && event.detail.target.closest(".review-item");
    if (!item) return;
    var list = items(), at = list.indexOf(item);
    window.__nextReview = list[at + 1] ? list[at + 1].id : (list[at - 1] ? list[at - 1].id : null);
  });
  document.addEventListener("htmx:afterSwap", function () {
    if (window.__nextReview) {
      var next = document.getElementById(window.__nextReview);
      window.__nextReview = null;
      if (next) next.focus();
    }
  });
})();
