// The gallery's first screen: the time from navigation to the first grid
// thumbnails in the DOM (`#grid .photo[data-id]`, what app.js renders from
// the first /api/photos page), in the system Chromium driven by
// playwright-core (tools/node). Each run is a fresh browser context: no
// HTTP cache, no cookies, no service worker; the browser process stays up,
// so its start is not counted. bench/gallery_scale.py runs it against
// `tandem serve` on the 1,000,000-photo catalog (target: <= 1 s).
//
//   NODE_PATH=tools/node/node_modules node bench/gallery_first_screen.js URL \
//     [--runs 5] [--chromium /usr/bin/chromium] [--selector '#grid .photo[data-id]'] [--timeline]
//
// Prints one line per run and a JSON line last: goto_ms (page.goto until
// the selector is present, measured here), page_ms (the page's own
// performance.now() at that moment: from navigation start, without the
// protocol's round trips), items (grid items present then), median and max
// of goto_ms. --timeline also prints each request's start and end (ms
// after goto) up to that moment.
'use strict';

const { chromium } = require('playwright-core');

function args(argv) {
  const a = { url: null, runs: 5, chromium: '/usr/bin/chromium', selector: '#grid .photo[data-id]', timeout: 30000,
              timeline: false };
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i];
    if (k === '--runs') a.runs = Number(argv[++i]);
    else if (k === '--chromium') a.chromium = argv[++i];
    else if (k === '--selector') a.selector = argv[++i];
    else if (k === '--timeout') a.timeout = Number(argv[++i]);
    else if (k === '--timeline') a.timeline = true;
    else if (!a.url) a.url = k;
    else throw new Error('unknown argument ' + k);
  }
  if (!a.url) throw new Error('usage: gallery_first_screen.js URL [--runs N] [--chromium PATH]');
  return a;
}

function median(xs) {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const a = args(process.argv.slice(2));
  const browser = await chromium.launch({ executablePath: a.chromium, headless: true,
                                          args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const runs = [];
  try {
    for (let i = 0; i < a.runs; ++i) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      const failed = [];
      page.on('requestfailed', (r) => failed.push(r.url()));
      const timeline = [];
      const since = () => Math.round(Number(process.hrtime.bigint() - t0) / 1e5) / 10;
      page.on('request', (r) => timeline.push([since(), 'request', r.url()]));
      page.on('requestfinished', (r) => timeline.push([since(), 'finished', r.url()]));
      const t0 = process.hrtime.bigint();
      await page.goto(a.url, { waitUntil: 'commit', timeout: a.timeout });
      await page.waitForSelector(a.selector, { state: 'attached', timeout: a.timeout });
      const gotoMs = Number(process.hrtime.bigint() - t0) / 1e6;
      const inPage = await page.evaluate((sel) => ({ now: performance.now(),
                                                     items: document.querySelectorAll(sel).length }), a.selector);
      const run = { goto_ms: Math.round(gotoMs * 10) / 10, page_ms: Math.round(inPage.now * 10) / 10,
                    items: inPage.items, failed_requests: failed.length };
      runs.push(run);
      console.log(`run ${i + 1}: ${JSON.stringify(run)}`);
      if (a.timeline) for (const [ms, what, url] of timeline) if (ms <= gotoMs) console.log(`  ${ms} ms ${what} ${url}`);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  const g = runs.map((r) => r.goto_ms);
  console.log(JSON.stringify({ url: a.url, selector: a.selector, runs, median_ms: median(g), max_ms: Math.max(...g),
                               page_median_ms: median(runs.map((r) => r.page_ms)) }));
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
