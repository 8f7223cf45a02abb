// hearth command center: the live stream, confirmations, replay, countdowns. No inline script
// anywhere (the CSP forbids it); everything written into the page here is textContent.
(function () {
  "use strict";
  var body = document.body;

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });

  function onState(data) {
    var badge = document.getElementById("pending-badge");
    if (badge) {
      badge.textContent = data.pending_approvals ? String(data.pending_approvals) : "";
      badge.hidden = !data.pending_approvals;
    }
    body.dataset.version = String(data.version || 0);
    body.dispatchEvent(new CustomEvent("hearth:state", { detail: data }));
  }

  if (body.dataset.live && window.EventSource) {
    var stream = new EventSource("/api/events");
    stream.addEventListener("state", function (event) {
      try { onState(JSON.parse(event.data)); } catch (e) { /* a torn event: the next one is whole */ }
    });
  }

  // Replay: show the steps one by one (buttons, or the left and right arrow keys).
  var at = -1;
  function steps() { return Array.prototype.slice.call(document.querySelectorAll("#steps > li.step")); }
  function show(index) {
    var all = steps();
    if (!all.length) { return; }
    at = index < 0 ? -1 : Math.min(index, all.length - 1);
    all.forEach(function (li, i) {
      li.hidden = at >= 0 && i > at;
      li.classList.toggle("current", i === at);
    });
    var counter = document.getElementById("replay-counter");
    if (counter) { counter.textContent = at < 0 ? "all " + all.length + " steps" : "step " + (at + 1) + " of " + all.length; }
    if (at >= 0) { all[at].scrollIntoView({ block: "nearest" }); }
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-replay]") : null;
    if (!button) { return; }
    var how = button.dataset.replay;
    if (how === "first") { show(0); }
    else if (how === "prev") { show(at < 0 ? steps().length - 1 : Math.max(0, at - 1)); }
    else if (how === "next") { show(at < 0 ? 0 : at + 1); }
    else { show(-1); }
  });
  document.addEventListener("keydown", function (event) {
    var tag = (event.target.tagName || "").toLowerCase();
    if (!document.getElementById("replay") || tag === "input" || tag === "textarea" || tag === "select") { return; }
    if (event.key === "ArrowRight") { show(at < 0 ? 0 : at + 1); event.preventDefault(); }
    if (event.key === "ArrowLeft") { show(at < 0 ? steps().length - 1 : Math.max(0, at - 1)); event.preventDefault(); }
  });

  // Approvals: the time left, counted down between refreshes, in the words the server wrote it
  // (hearth/render.py's time_left: 2 d 3 h, 11 h 59 min, 14 min 30 s, 40 s).
  function timeLeft(total) {
    var days = Math.floor(total / 86400), hours = Math.floor(total % 86400 / 3600);
    var minutes = Math.floor(total % 3600 / 60), seconds = total % 60;
    if (days) { return days + " d " + hours + " h"; }
    if (hours) { return hours + " h " + minutes + " min"; }
    return minutes ? minutes + " min " + seconds + " s" : seconds + " s";
  }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-expires]").forEach(function (el) {
      var left = Math.round((Date.parse(el.dataset.expires) - now) / 1000);
      if (isNaN(left)) { return; }
      el.textContent = left <= 0 ? "expired" : timeLeft(left) + " left";
      el.classList.toggle("soon", left < 60);
    });
  }
  window.setInterval(tick, 1000);

  // A goal's length as the server will count it (line breaks as one character, not the CRLF a
  // form sends), against the limit, before it is sent.
  function counted(el) {
    var box = document.getElementById(el.dataset.limitFor);
    var limit = Number((el.textContent.match(/[\d,]+/) || ["0"])[0].replace(/,/g, ""));
    if (!el.dataset.limit) { el.dataset.limit = String(limit); }
    limit = Number(el.dataset.limit);
    if (!box || !limit) { return; }
    var length = box.value.replace(/\r\n/g, "\n").length;
    el.textContent = length.toLocaleString("en") + " of " + limit.toLocaleString("en") + " characters" +
      (length > limit ? ": " + (length - limit).toLocaleString("en") + " too many" : "");
    el.classList.toggle("over", length > limit);
  }
  document.addEventListener("input", function (event) {
    var id = event.target && event.target.id;
    if (!id) { return; }
    document.querySelectorAll("[data-limit-for='" + id + "']").forEach(counted);
  });

  // Time waiting for a person, counted up between refreshes.
  function waited() {
    document.querySelectorAll("[data-waiting-since]").forEach(function (el) {
      var since = Date.parse(el.dataset.waitingSince);
      if (isNaN(since)) { return; }
      var total = Math.round((Number(el.dataset.waitedBeforeMs || 0) + Date.now() - since) / 1000);
      el.textContent = (total >= 60 ? Math.floor(total / 60) + " min " : "") + (total % 60) + " s (waiting now)";
    });
  }
  window.setInterval(waited, 1000);
  document.querySelectorAll("[data-limit-for]").forEach(counted);

  // A table that turns into cards on a phone (table.stacked, hearth.css): each cell is labelled with
  // its column's heading, here once rather than beside every cell of every template (and again
  // whenever a fragment is swapped in). A cell that names its own label keeps it.
  function labelled(root) {
    root.querySelectorAll("table.stacked").forEach(function (table) {
      var heads = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
        return th.textContent.trim();
      });
      table.querySelectorAll("tbody tr").forEach(function (row) {
        Array.prototype.forEach.call(row.children, function (cell, i) {
          if (!cell.dataset.label && heads[i]) { cell.dataset.label = heads[i]; }
        });
      });
    });
  }
  labelled(document);
  body.addEventListener("htmx:afterSwap", function (event) { labelled(event.target); });
})();
