/* Scroll cues (styles in site.css): a table, API signature, code block, figure or formula wider than
   its column scrolls sideways inside its own box; this marks the edges that have more content beyond
   them (.scroll-cue-left, .scroll-cue-right) whenever the box is laid out, resized or scrolled, and
   marks an inline formula wider than its line (.math-scroll) so that it scrolls. A formula is wider
   than its line when its typeset box (mjx-container) is wider than the span.math that the line's
   max-width allows; MathJax's glyphs also overhang their own box (by up to ~30 px on fractions and
   scripts), which must not count, so the span's scrollWidth is not the test. */
(function () {
  "use strict";
  var SELECTOR = ".pst-scrollable-table-container, dl.py > dt.sig, div.highlight > pre, div.figure-scroll, div.claim-table, " +
    'div.math mjx-container[display="true"], span.math.math-scroll';
  var MATH_SLACK = 16;  // (without MathJax's container: scrollWidth beyond this counts as wider)
  function update(el) {
    var more = el.scrollWidth - el.clientWidth;
    var slack = el.matches("mjx-container") ? 4 : 1;
    el.classList.toggle("scroll-cue-left", more > slack && el.scrollLeft > 1);
    el.classList.toggle("scroll-cue-right", more > slack && el.scrollLeft < more - 1);
  }
  function markWideInlineMath() {
    document.querySelectorAll("span.math").forEach(function (m) {
      if (m.closest("div.math")) return;
      var c = m.querySelector("mjx-container");
      var wide = c ? c.getBoundingClientRect().width > m.clientWidth + 1 : m.scrollWidth > m.clientWidth + MATH_SLACK;
      m.classList.toggle("math-scroll", wide);
    });
  }
  var resized = typeof ResizeObserver === "function"
    ? new ResizeObserver(function (entries) { entries.forEach(function (e) { update(e.target); }); })
    : null;
  function watch() {
    markWideInlineMath();
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
