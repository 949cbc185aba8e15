/* Figures legible on a phone (styles in site.css). The book's figures are shown at 100 px per inch
   and symbreak.plotting.legible() keeps their smallest text at MIN_FONT_PT = 8 pt (11.1 px) once a
   figure is scaled to the 750 px page column. On a phone the column is about 350 px, so a wide
   figure scaled into it would show its text at 4-5 px. Each figure therefore keeps a minimum width
   at which its smallest text is TARGET_PX on screen, 8 pt (10.67 CSS px) or more, and scrolls
   sideways inside its own box (with the scroll cue of _static/scroll-cue.js) when the column is
   narrower; a tap opens the full-size image (Sphinx links every figure to its file). On a desktop
   (1400 px and wider: a column of about 770 px) the minimum, at most 723 px, is below the column
   width, so nothing changes there. */
(function () {
  "use strict";
  var PX_PER_INCH = 100;       // symbreak.plotting / symbreak.explorer: CSS px per figure inch
  var PAGE_WIDTH_PX = 750;     // symbreak.plotting.PAGE_WIDTH_IN at 100 px per inch
  var MIN_FONT_PT = 8;         // symbreak.plotting.MIN_FONT_PT
  var TARGET_PX = 10.7;        // the smallest figure text on screen, in CSS px: 8 pt = 10.67 px
  // smallest text at the declared width w (<= 750 px): MIN_FONT_PT / 72 * 100 px; wider figures
  // were scaled up by legible() in proportion, so the factor applies to min(w, 750 px)
  var FACTOR = TARGET_PX / (MIN_FONT_PT / 72 * PX_PER_INCH);
  var SELECTOR = ".bd-article img";

  function fit(img) {
    if (img.hasAttribute("data-legible") || img.closest(".navbar-brand, .sidebar-brand, .logo")) return;
    var w = parseFloat(img.style.width);  // the figure's width at 100 px per inch
    if (!(w > 0)) return;
    img.setAttribute("data-legible", "");
    img.style.minWidth = Math.ceil(FACTOR * Math.min(w, PAGE_WIDTH_PX)) + "px";
    var inner = img.parentElement && img.parentElement.matches("a.image-reference") ? img.parentElement : img;
    if (inner.parentElement && inner.parentElement.classList.contains("figure-scroll")) return;
    var box = document.createElement("div");
    box.className = "figure-scroll";
    inner.parentNode.insertBefore(box, inner);
    box.appendChild(inner);
  }
  function run() { document.querySelectorAll(SELECTOR).forEach(fit); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
