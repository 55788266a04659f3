// Zooming the document on a phone so the field being filled is large enough to tap and read.
// Browsers let no script set the pinch zoom, so the pages themselves grow (CSS --zoom on the document
// area) and the document scrolls sideways inside itself; pdf-view re-renders them sharp at the new width.

/** A touch target a thumb hits reliably (Apple's and Google's guidance; WCAG 2.5.5 asks 44 px). */
export const TOUCH_TARGET_PX = 44;
/** Past this the page is mostly off screen and pdf.js canvases get large; marker fields need about 4x. */
const MAX_ZOOM = 6;
const PHONE = '(max-width: 600px), (pointer: coarse)';

/**
 * `area` is the document element holding the page boxes; `resetButton` ("Fit page") is shown while
 * zoomed and puts the pages back to the screen's width; `afterReset` is called then, to place focus
 * (the button hides itself).
 */
export function createZoom({ area, resetButton, afterReset }) {
  const phone = window.matchMedia(PHONE);
  let level = 1;

  const apply = (z) => {
    level = z;
    area.style.setProperty('--zoom', String(z));
    area.classList.toggle('zoomed', z > 1);
    // A region that scrolls sideways must be reachable from the keyboard (arrow keys scroll it).
    if (z > 1) area.tabIndex = 0;
    else area.removeAttribute('tabindex');
    resetButton.hidden = z === 1;
  };

  resetButton.addEventListener('click', () => {
    apply(1);
    area.scrollLeft = 0;
    afterReset?.();
  });

  return {
    /**
     * On a phone, zooms in until a field `heightPercent` of its page tall is at least 44 px on screen
     * (never out). Measured from the page box, not the field's, which CSS holds at 24 px at least.
     * Returns whether the zoom changed.
     */
    fit(pageElement, heightPercent) {
      if (!phone.matches || !pageElement || !(heightPercent > 0)) return false;
      const onScreen = (pageElement.getBoundingClientRect().height * heightPercent) / 100;
      if (!onScreen || onScreen >= TOUCH_TARGET_PX) return false;
      // A little over the floor, so rounding never leaves the field at 43.9 px.
      const wanted = Math.min(MAX_ZOOM, (level * (TOUCH_TARGET_PX + 4)) / onScreen);
      if (wanted <= level) return false;
      apply(Math.round(wanted * 100) / 100);
      return true;
    },
    /** Back to the screen's width (after the outcome: the whole page is worth seeing again). */
    reset() {
      apply(1);
      area.scrollLeft = 0;
    },
    get level() {
      return level;
    },
  };
}
