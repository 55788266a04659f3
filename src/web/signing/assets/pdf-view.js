// Renders the PDF's pages with pdf.js (served from our origin) into canvases, one positioned box per page.
// Each box keeps the page's aspect ratio, so field overlays placed in percentages scale with it.
import { t } from './i18n.js';

/** Loads pdf.js and opens the document from its bytes. `base` is the versioned pdf.js folder URL. */
export async function openPdf(base, bytes) {
  const pdfjs = await import(new URL('pdf.min.mjs', base).href);
  pdfjs.GlobalWorkerOptions.workerSrc = new URL('pdf.worker.min.mjs', base).href;
  // pdf.js 6 draws pages on an OffscreenCanvas in a worker of its own where the browser has one, so a
  // long page never blocks typing or scrolling; elsewhere it draws on this thread as before.
  pdfjs.GlobalWorkerOptions.rendererSrc = new URL('pdf.renderer.min.mjs', base).href;
  const task = pdfjs.getDocument({
    data: bytes,
    // No `new Function` for PostScript functions: the page's CSP forbids eval, and so do we.
    isEvalSupported: false,
    enableXfa: false,
    cMapUrl: new URL('cmaps/', base).href,
    cMapPacked: true,
    standardFontDataUrl: new URL('standard_fonts/', base).href,
    wasmUrl: new URL('wasm/', base).href,
    iccUrl: new URL('iccs/', base).href,
  });
  return task.promise;
}

/** Browsers refuse canvases much past 16 megapixels (iOS Safari first); stay under that. */
const MAX_CANVAS_PIXELS = 16_000_000;

/**
 * Creates one box per page in `container` and renders each page when it comes near the viewport, again
 * when its width changes a lot (rotation of a phone, a resized window). Returns the page views; each
 * has `overlay`, the element fields are placed in.
 */
export async function createPageViews(container, doc) {
  const views = [];
  for (let n = 1; n <= doc.numPages; n++) {
    const page = await doc.getPage(n);
    const base = page.getViewport({ scale: 1 });
    const element = document.createElement('section');
    element.className = 'page';
    element.dataset.testid = `page-${n}`;
    element.dataset.page = String(n);
    element.setAttribute('aria-label', t('signing-widgets.pageOf', { n, total: doc.numPages }));
    element.style.aspectRatio = `${base.width} / ${base.height}`;
    const overlay = document.createElement('div');
    overlay.className = 'overlay';
    element.append(overlay);
    container.append(element);
    views.push({ n, page, base, element, overlay, canvas: null, renderedScale: 0, task: null, visible: false });
  }

  const render = async (view) => {
    const cssWidth = view.element.clientWidth;
    if (!cssWidth) return;
    const dpr = Math.min(window.devicePixelRatio || 1, 3);
    let scale = (cssWidth * dpr) / view.base.width;
    const area = view.base.width * scale * view.base.height * scale;
    if (area > MAX_CANVAS_PIXELS) scale *= Math.sqrt(MAX_CANVAS_PIXELS / area);
    if (view.renderedScale && Math.abs(view.renderedScale - scale) / scale < 0.15) return;
    view.task?.cancel();
    const viewport = view.page.getViewport({ scale });
    const canvas = document.createElement('canvas');
    canvas.width = Math.floor(viewport.width);
    canvas.height = Math.floor(viewport.height);
    canvas.setAttribute('aria-hidden', 'true');
    const task = view.page.render({ canvas, viewport });
    view.task = task;
    try {
      await task.promise;
    } catch (err) {
      if (err?.name === 'RenderingCancelledException') return;
      throw err;
    } finally {
      if (view.task === task) view.task = null;
    }
    // Swap only when the new canvas is complete, so a re-render never flashes a blank page.
    if (view.canvas) view.canvas.replaceWith(canvas);
    else view.element.prepend(canvas);
    view.canvas = canvas;
    view.renderedScale = scale;
    view.element.dataset.rendered = 'true';
  };

  const renderSafely = (view) =>
    render(view).catch((err) => {
      view.element.dataset.rendered = 'error';
      console.error(`page ${view.n} could not be rendered`, err);
    });

  const byElement = new Map(views.map((v) => [v.element, v]));
  const seen = new IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        const view = byElement.get(entry.target);
        view.visible = entry.isIntersecting;
        if (entry.isIntersecting) renderSafely(view);
      }
    },
    { rootMargin: '100% 0px' },
  );
  let resizeTimer = 0;
  const resized = new ResizeObserver(() => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => views.filter((v) => v.visible).forEach(renderSafely), 150);
  });
  for (const view of views) {
    seen.observe(view.element);
    resized.observe(view.element);
  }
  return views;
}
