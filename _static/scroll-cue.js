/* Scroll cues (styles in site.css): a table, API signature, code block or figure wider than its column
   scrolls sideways inside its own box; this marks the edges that have more content beyond them
   (.scroll-cue-left, .scroll-cue-right) whenever the box is laid out, resized or scrolled. */
(function () {
  "use strict";
  var SELECTOR = ".pst-scrollable-table-container, dl.py > dt.sig, div.highlight > pre, div.figure-scroll";
  function update(el) {
    var more = el.scrollWidth - el.clientWidth;
    el.classList.toggle("scroll-cue-left", more > 1 && el.scrollLeft > 1);
    el.classList.toggle("scroll-cue-right", more > 1 && el.scrollLeft < more - 1);
  }
  var resized = typeof ResizeObserver === "function"
    ? new ResizeObserver(function (entries) { entries.forEach(function (e) { update(e.target); }); })
    : null;
  function watch() {
    document.querySelectorAll(SELECTOR).forEach(function (el) {
      if (!el.hasAttribute("data-scroll-cue")) {
        el.setAttribute("data-scroll-cue", "");
        el.addEventListener("scroll", function () { update(el); }, { passive: true });
        if (resized) resized.observe(el);
      }
      update(el);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();
  window.addEventListener("load", watch);
  window.addEventListener("resize", watch);
  // formulas change the width of what contains them once MathJax has typeset them
  var tries = 0;
  (function afterMath() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(watch);
    else if (tries++ < 50) setTimeout(afterMath, 200);
  })();
})();
