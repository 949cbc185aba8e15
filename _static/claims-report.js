/* The reproduction report (book/reproduction-report.md, tables by symbreak.sphinxext): a status
   and evidence filter over every claims table of the page, and one line per claim on wide screens, a row opening
   to its full text when clicked. Plain script, no library, works offline and over file://; without
   it every row shows, in full. */
(function () {
  "use strict";
  function setup() {
    var tables = document.querySelectorAll("table.claims-rows");
    if (!tables.length) return;
    var rows = document.querySelectorAll("table.claims-rows tbody tr");
    var statuses = [];
    rows.forEach(function (tr) {
      tr.classList.forEach(function (c) {
        if (c.indexOf("claims-status-") === 0 && statuses.indexOf(c) < 0) statuses.push(c);
      });
    });
    var order = ["derived", "reproduced", "derived-reproduced", "stated", "missing", "deviates"];
    statuses.sort(function (a, b) {
      return order.indexOf(a.slice(14)) - order.indexOf(b.slice(14));
    });
    var bar = document.createElement("fieldset");
    bar.className = "claims-filter";
    var legend = document.createElement("legend");
    legend.textContent = "Show the rows with status";
    bar.appendChild(legend);
    var boxes = [];
    function count(cls) {
      return document.querySelectorAll("table.claims-rows tbody tr." + cls).length;
    }
    statuses.forEach(function (cls) {
      var label = document.createElement("label");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.checked = true;
      box.value = cls;
      box.addEventListener("change", apply);
      boxes.push(box);
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + cls.slice(14).replace("derived-reproduced", "derived+reproduced") + " (" + count(cls) + ")"));
      bar.appendChild(label);
    });
    // the kind of evidence: identity, construction, independent, simulation (a second group)
    var kinds = [];
    rows.forEach(function (tr) {
      tr.classList.forEach(function (c) {
        if (c.indexOf("claims-evidence-") === 0 && kinds.indexOf(c) < 0) kinds.push(c);
      });
    });
    var kindOrder = ["identity", "construction", "independent", "simulation", "none"];
    kinds.sort(function (a, b) {
      return kindOrder.indexOf(a.slice(16)) - kindOrder.indexOf(b.slice(16));
    });
    var kindBoxes = [];
    if (kinds.length) {
      var kindLegend = document.createElement("span");
      kindLegend.className = "claims-filter-group";
      kindLegend.textContent = "and evidence";
      bar.appendChild(kindLegend);
    }
    kinds.forEach(function (cls) {
      var label = document.createElement("label");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.checked = true;
      box.value = cls;
      box.addEventListener("change", apply);
      kindBoxes.push(box);
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + cls.slice(16).replace("none", "no check") + " (" + count(cls) + ")"));
      bar.appendChild(label);
    });
    // only the numbered results whose checks are identities or constructions (no reproducing evidence)
    var onlyIdentity = null;
    if (count("claims-has-identity-only")) {
      var idLabel = document.createElement("label");
      onlyIdentity = document.createElement("input");
      onlyIdentity.type = "checkbox";
      onlyIdentity.addEventListener("change", apply);
      idLabel.appendChild(onlyIdentity);
      idLabel.appendChild(document.createTextNode(" only results resting on identity or construction (" +
        count("claims-has-identity-only") + ")"));
      bar.appendChild(idLabel);
    }
    var fullLabel = document.createElement("label");
    fullLabel.className = "claims-filter-full";
    var full = document.createElement("input");
    full.type = "checkbox";
    full.addEventListener("change", function () {
      document.body.classList.toggle("claims-full-text", full.checked);
    });
    fullLabel.appendChild(full);
    fullLabel.appendChild(document.createTextNode(" full statements"));
    bar.appendChild(fullLabel);
    var shown = document.createElement("span");
    shown.className = "claims-filter-count";
    shown.setAttribute("aria-live", "polite");
    bar.appendChild(shown);
    function apply() {
      var on = boxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
      var onKinds = kindBoxes.filter(function (b) { return b.checked; }).map(function (b) { return b.value; });
      var n = 0;
      rows.forEach(function (tr) {
        var show = on.some(function (c) { return tr.classList.contains(c); }) &&
          (!kindBoxes.length || onKinds.some(function (c) { return tr.classList.contains(c); })) &&
          (!onlyIdentity || !onlyIdentity.checked || tr.classList.contains("claims-has-identity-only"));
        tr.hidden = !show;
        if (show) n += 1;
      });
      shown.textContent = n + " of " + rows.length + " rows (claims and results together)";
    }
    rows.forEach(function (tr) {
      tr.addEventListener("click", function (ev) {
        if (ev.target.closest("a")) return;
        tr.classList.toggle("claims-open");
      });
    });
    // one filter, above the first table, for all of them (it stays in view while the page scrolls)
    var first = tables[0].closest(".pst-scrollable-table-container, .table-wrapper") || tables[0];
    first.parentNode.insertBefore(bar, first);
    apply();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
