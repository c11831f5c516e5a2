#!/usr/bin/env node
// The gallery page in headless Chromium (playwright-core, the system's
// Chromium), against a running `tandem serve --allow-edits` and the folder
// `tandem gallery` wrote. run_browser_test.py builds the catalog, starts the
// server and writes expect.json (what the catalog holds); this script checks
// that the page shows it:
//   the grid pages in every photo, in order, names shown as text (a name that
//   is markup stays text), missing and failed photos badged, never broken;
//   a tag, a person, a search, a month (timeline) narrow it to exactly the
//   expected photos, and a reload keeps the filter;
//   the photo view draws each object box and face region where the catalog
//   puts it, with its label; Esc closes it;
//   duplicates are grouped; the people page crops faces, and naming and
//   merging there reach the catalog (`tandem people CAT --json`);
//   the static gallery, opened from file://, shows the same grid and filters.
// Screenshots go to --artifacts. Exit 77 ("SKIP: ...") without Chromium or
// playwright-core, 1 with a message at the first failed check.
// --web DIR: the page's files from DIR (gallery/web) instead of the ones
// built into tandem, to try a changed page without a rebuild.
//
// usage: node browser_test.js --url http://127.0.0.1:PORT/ --expect expect.json
//          --artifacts DIR --tandem BIN --catalog CAT [--static DIR] [--web DIR]
//          [--chromium PATH]
'use strict';

const childProcess = require('child_process');
const fs = require('fs');
const path = require('path');
const url = require('url');

const TIMEOUT = 15000;

function skip(message) {
  console.log('SKIP: ' + message);
  process.exit(77);
}

class CheckFailed extends Error {}

function check(ok, message) {
  if (!ok) throw new CheckFailed(message);
}

function sameSet(got, want, what) {
  const g = [...got].sort();
  const w = [...want].sort();
  check(JSON.stringify(g) === JSON.stringify(w),
    `${what}: expected ${JSON.stringify(w)}, the page shows ${JSON.stringify(g)}`);
}

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z]+)$/.exec(argv[i]);
    if (!m || i + 1 >= argv.length) throw new Error('bad argument: ' + argv[i]);
    args[m[1]] = argv[++i];
  }
  for (const k of ['url', 'expect', 'artifacts', 'tandem', 'catalog'])
    if (!args[k]) throw new Error('missing --' + k);
  return args;
}

function loadPlaywright() {
  const local = path.join(__dirname, '..', '..', 'tools', 'node', 'node_modules', 'playwright-core');
  for (const where of [local, 'playwright-core']) {
    try { return require(where); } catch (e) { /* try the next */ }
  }
  return null;
}

function findChromium(given) {
  const candidates = given ? [given] : [];
  for (const dir of (process.env.PATH || '').split(path.delimiter))
    for (const name of ['chromium', 'chromium-headless-shell', 'chromium-browser'])
      candidates.push(path.join(dir, name));
  candidates.push('/usr/bin/chromium');
  return candidates.find((c) => { try { fs.accessSync(c, fs.constants.X_OK); return true; } catch (e) { return false; } });
}

// ------------------------------------------------------------------ page helpers

// Waits for the grid to show `query`, then scrolls until its last page is in.
async function loadGrid(page, query) {
  try {
    await page.waitForFunction((q) => {
      const g = document.querySelector('#grid');
      return g && g.dataset.query === q && ['more', 'end', 'error'].includes(g.dataset.state);
    }, query, { timeout: TIMEOUT });
  } catch (e) {
    const shown = await page.$eval('#grid', (g) => `"${g.dataset.query}" (${g.dataset.state})`).catch(() => 'no #grid');
    throw new CheckFailed(`the grid never showed "${query}"; it shows ${shown}, address ${await page.evaluate(() => location.hash)}`);
  }
  for (let i = 0; i < 200; i++) {
    const st = await page.$eval('#grid', (g) => g.dataset.state);
    check(st !== 'error', `the grid for "${query}" failed to load: ` + await page.textContent('#grid-status'));
    if (st === 'end') break;
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await page.waitForTimeout(50);
  }
  check(await page.$eval('#grid', (g) => g.dataset.state) === 'end', `the grid for "${query}" never reached its end`);
  return page.$$eval('#grid .photo', (items) => items.map((a) => a.dataset.name));
}

const query = (o) => new URLSearchParams(o).toString();

async function gridFor(page, filters, what, want) {
  const names = await loadGrid(page, query(filters));
  sameSet(names, want, what);
  return names;
}

async function openPage(page, address) {
  await page.goto(address);
  await page.waitForFunction(() => ['server', 'static'].includes(document.body.dataset.mode), null, { timeout: TIMEOUT });
}

function tandemPeople(args) {
  const out = childProcess.execFileSync(args.tandem, ['people', args.catalog, '--json'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

// ------------------------------------------------------------------ checks

async function checkGrid(page, expect, mode) {
  const names = await loadGrid(page, '');
  sameSet(names, Object.keys(expect.photos), `${mode}: the grid`);
  // Order: newest date taken first, then undated (photos with one date in any order).
  const ranks = names.map((n) => expect.rank[n]);
  for (let i = 1; i < ranks.length; i++)
    check(ranks[i - 1] <= ranks[i], `${mode}: the grid's order puts ${names[i - 1]} before ${names[i]}`);
  const pages = Number(await page.$eval('#grid', (g) => g.dataset.pages));
  check(pages > 1, `${mode}: the grid came in ${pages} page(s); limit=3 should make several`);

  // The hostile name is text: the tile carries it verbatim and no <img src=x> appeared.
  const hostile = await page.$$eval('#grid .photo', (items, n) =>
    items.filter((a) => a.dataset.name === n).map((a) => a.querySelector('.caption .name').textContent), expect.hostile);
  check(hostile.length === 1 && hostile[0] === expect.hostile, `${mode}: the hostile file name is not shown as text`);
  check(await page.$('img[src="x"]') === null, `${mode}: a file name was parsed as markup`);

  const missing = await page.$eval(`#grid .photo[data-id="${expect.photos[expect.missing].id}"]`, (a) => ({
    badge: !!a.querySelector('.badge.missing'), img: !!a.querySelector('img'),
  }));
  check(missing.badge && !missing.img, `${mode}: the missing photo has no "missing" badge or asks for an image`);
  const failed = await page.$(`#grid .photo[data-id="${expect.photos[expect.failed].id}"] .badge.failed`);
  check(failed !== null, `${mode}: the failed photo has no "failed" badge`);
  // Every thumbnail either loaded or became a placeholder: no broken images.
  await page.waitForFunction(() => [...document.querySelectorAll('#grid img')].every((i) => i.complete), null, { timeout: TIMEOUT });
  const broken = await page.$$eval('#grid img', (imgs) => imgs.filter((i) => !i.naturalWidth).map((i) => i.alt));
  check(broken.length === 0, `${mode}: broken thumbnails: ${JSON.stringify(broken)}`);
}

async function checkFilters(page, expect, mode, shots) {
  let first = true;
  for (const [label, want] of Object.entries(expect.tags)) {
    await page.selectOption('#f-tag', label);
    await gridFor(page, { tag: label }, `${mode}: tag "${label}"`, want);
    check(decodeURIComponent(await page.evaluate(() => location.hash)).includes('tag=' + label.replace(/ /g, '+')),
      `${mode}: the tag filter is not in the address`);
    if (first && shots) await page.screenshot({ path: shots });
    first = false;
  }
  // Back steps to the filter before; a reload keeps the filter (it lives in
  // the address).
  const tags = Object.entries(expect.tags);
  if (tags.length > 1) {
    const [before, wantBefore] = tags[tags.length - 2];
    await page.goBack();
    await gridFor(page, { tag: before }, `${mode}: back to tag "${before}"`, wantBefore);
    await page.goForward();
  }
  const [label, want] = tags[tags.length - 1];
  await page.reload();
  await gridFor(page, { tag: label }, `${mode}: tag "${label}" after a reload`, want);
  check(await page.$eval('#f-tag', (s) => s.value) === label, `${mode}: the tag select lost its value on reload`);
  await page.click('#f-clear');
  await loadGrid(page, '');

  // The page lists people when the select is about to be used (its focus),
  // not on the first screen; selectOption waits for the option to appear.
  await page.focus('#f-person');
  const people = Object.entries(expect.people);
  for (const [id, person] of people) {
    await page.selectOption('#f-person', id);
    await gridFor(page, { person: id }, `${mode}: person ${id}`, person.photos);
  }
  // A person in the address: after a reload the select names that person
  // (the list is asked for because of the address, with no focus).
  if (people.length) {
    const [id, person] = people[people.length - 1];
    await page.reload();
    await gridFor(page, { person: id }, `${mode}: person ${id} after a reload`, person.photos);
    const faces = ' (' + person.faces.toLocaleString('en-US') + ')';
    try {
      await page.waitForFunction(([i, f]) => {
        const s = document.querySelector('#f-person');
        return s.value === i && s.selectedOptions[0].textContent.endsWith(f);
      }, [id, faces], { timeout: TIMEOUT });
    } catch (e) {
      const shown = await page.$eval('#f-person', (s) => `"${s.value}": ${s.selectedOptions[0] && s.selectedOptions[0].textContent}`);
      throw new CheckFailed(`${mode}: after a reload with person ${id}, the person select shows ${shown}, not the person and${faces}`);
    }
  }
  await page.click('#f-clear');
  await loadGrid(page, '');

  for (const [text, want] of Object.entries(expect.search)) {
    await page.fill('#f-q', text);
    await page.press('#f-q', 'Enter');
    await gridFor(page, { q: text }, `${mode}: search "${text}"`, want);
  }
  await page.fill('#f-q', '');
  await page.click('#f-clear');
  await loadGrid(page, '');

  // The timeline: a month's bar filters to that month.
  for (const [month, want] of Object.entries(expect.months)) {
    await page.click('nav.views button[data-view="timeline"]');
    await page.click(`#timeline .month[data-month="${month}"]`);
    // One month: from=M&to=M (the API includes a `to` month).
    await gridFor(page, { from: month, to: month }, `${mode}: month ${month}`, want);
    check(await page.$eval('#f-month', (s) => s.value) === month, `${mode}: the month select does not show ${month}`);
  }
  await page.click('#f-clear');
  await loadGrid(page, '');
}

// Boxes are drawn where the catalog puts them: each box's position inside
// the stage, as a fraction, matches box / photo size.
async function checkViewer(page, expect, name, mode, shot) {
  const want = expect.photos[name];
  await page.waitForSelector(`#viewer[data-id="${want.id}"][data-state="ready"]`, { timeout: TIMEOUT });
  await page.waitForFunction(() => {
    const i = document.querySelector('#viewer img.full');
    return i && i.complete && i.naturalWidth > 0;
  }, null, { timeout: TIMEOUT });
  if (mode === 'server') {
    const fallback = await page.$eval('#viewer img.full', (i) => i.dataset.fallback || '');
    check(fallback === '', `${mode}: ${name}: the photo view fell back to the thumbnail for a JPEG`);
  }
  const drawn = await page.evaluate(() => {
    const stage = document.querySelector('#viewer .stage').getBoundingClientRect();
    const rel = (e) => {
      const r = e.getBoundingClientRect();
      return [(r.left - stage.left) / stage.width, (r.top - stage.top) / stage.height,
        (r.right - stage.left) / stage.width, (r.bottom - stage.top) / stage.height];
    };
    return {
      stage: [stage.width, stage.height],
      objects: [...document.querySelectorAll('#viewer .box.object')].map((e) =>
        ({ label: e.dataset.label, text: e.textContent, at: rel(e) })),
      faces: [...document.querySelectorAll('#viewer .box.face')].map((e) =>
        ({ person: e.dataset.person, name: e.dataset.name, text: e.textContent, at: rel(e) })),
    };
  });
  check(drawn.objects.length === want.objects.length,
    `${mode}: ${name}: ${drawn.objects.length} object boxes, expected ${want.objects.length}`);
  check(drawn.faces.length === want.faces.length,
    `${mode}: ${name}: ${drawn.faces.length} face regions, expected ${want.faces.length}`);
  // The border (2 px) sits inside the box, so a box's rectangle is its corners.
  const tol = 3 / Math.min(...drawn.stage);
  const near = (at, box) => at.every((v, k) => Math.abs(v - box[k] / (k % 2 ? want.height : want.width)) <= tol);
  want.objects.forEach((o, k) => {
    const d = drawn.objects[k];
    check(d.label === o.label, `${mode}: ${name}: object ${k} is "${d.label}", expected "${o.label}"`);
    check(d.text.startsWith(o.label + ' ') && /\d\.\d\d$/.test(d.text), `${mode}: ${name}: object label "${d.text}" lacks its score`);
    check(near(d.at, o.box), `${mode}: ${name}: object ${k} drawn at ${JSON.stringify(d.at)}, not at ${JSON.stringify(o.box)}`);
  });
  want.faces.forEach((f, k) => {
    const d = drawn.faces[k];
    check(d.person === (f.person == null ? '' : String(f.person)), `${mode}: ${name}: face ${k} belongs to "${d.person}", expected ${f.person}`);
    check(d.text.startsWith((f.name || 'unnamed') + ' '), `${mode}: ${name}: face ${k} is labelled "${d.text}"`);
    check(near(d.at, f.box), `${mode}: ${name}: face ${k} drawn at ${JSON.stringify(d.at)}, not at ${JSON.stringify(f.box)}`);
  });
  if (shot) await page.screenshot({ path: shot });
  await page.keyboard.press('Escape');
  await page.waitForSelector('#viewer', { state: 'hidden', timeout: TIMEOUT });
  check(!(await page.evaluate(() => location.hash)).includes('photo='), `${mode}: Esc left the photo in the address`);
}

async function checkPhotoViews(page, expect, mode, shot) {
  // The first by a click on its tile, the rest through the address.
  const [first, ...rest] = expect.viewer;
  await loadGrid(page, '');
  await page.click(`#grid .photo[data-id="${expect.photos[first].id}"]`);
  await checkViewer(page, expect, first, mode, shot);
  for (const name of rest) {
    await page.evaluate((id) => { location.hash = '#limit=3&photo=' + id; }, expect.photos[name].id);
    await checkViewer(page, expect, name, mode, null);
  }
  // The failed photo shows its error, the missing one its badge and no broken image.
  const failed = expect.photos[expect.failed];
  await page.evaluate((id) => { location.hash = '#limit=3&photo=' + id; }, failed.id);
  await page.waitForSelector(`#viewer[data-id="${failed.id}"][data-state="ready"]`, { timeout: TIMEOUT });
  const error = await page.textContent('#viewer .side .error');
  check(error === failed.error, `${mode}: the failed photo's view shows "${error}", not its error`);
  // Neither the photo nor its thumbnail can be shown: a placeholder, not a broken image.
  await page.waitForSelector('#viewer .stage .placeholder', { timeout: TIMEOUT });
  check(await page.$('#viewer .stage img') === null, `${mode}: the failed photo's view keeps a broken image`);
  const missing = expect.photos[expect.missing];
  await page.evaluate((id) => { location.hash = '#limit=3&photo=' + id; }, missing.id);
  await page.waitForSelector(`#viewer[data-id="${missing.id}"][data-state="ready"]`, { timeout: TIMEOUT });
  check(await page.$('#viewer .badge.missing') !== null, `${mode}: the missing photo's view has no "missing" badge`);
  check(await page.$('#viewer img.full') === null, `${mode}: the missing photo's view asks for the photo`);
  // The hostile photo's view: its name as the heading's text.
  const hostile = expect.photos[expect.hostile];
  await page.evaluate((id) => { location.hash = '#limit=3&photo=' + id; }, hostile.id);
  await page.waitForSelector(`#viewer[data-id="${hostile.id}"][data-state="ready"]`, { timeout: TIMEOUT });
  check(await page.textContent('#viewer .side h2') === expect.hostile, `${mode}: the hostile name is not the view's heading`);
  await page.keyboard.press('Escape');
  await page.waitForSelector('#viewer', { state: 'hidden', timeout: TIMEOUT });
}

async function checkDuplicates(page, expect, mode) {
  await page.click('nav.views button[data-view="duplicates"]');
  await page.waitForSelector('#duplicates[data-state="end"]', { timeout: TIMEOUT });
  const groups = await page.$$eval('#duplicates .dup-group', (gs) =>
    gs.map((g) => [...g.querySelectorAll('.photo')].map((a) => a.dataset.name).sort()));
  sameSet(groups.map((g) => JSON.stringify(g)), expect.duplicates.map((g) => JSON.stringify(g)), `${mode}: duplicate groups`);
}

async function waitPeople(page) {
  await page.waitForSelector('#people[data-state="end"]', { timeout: TIMEOUT });
}

async function checkPeoplePage(page, expect, mode, shot) {
  await page.click('nav.views button[data-view="people"]');
  await waitPeople(page);
  const cards = await page.$$eval('#people .person', (cs) => cs.map((c) => ({ id: c.dataset.id, name: c.dataset.name })));
  sameSet(cards.map((c) => c.id), Object.keys(expect.people), `${mode}: people cards`);
  for (const c of cards)
    check(c.name === (expect.people[c.id].name || ''), `${mode}: person ${c.id} is named "${c.name}"`);
  // Each crop is the large thumbnail, placed once the photo's size is known.
  await page.waitForFunction(() => [...document.querySelectorAll('#people .crop img')].every((i) => i.classList.contains('placed')),
    null, { timeout: TIMEOUT });
  if (shot) await page.screenshot({ path: shot });
}

async function checkEdits(page, expect, args) {
  const { id, name, taken } = expect.rename;
  const card = `#people .person[data-id="${id}"]`;
  // A name another person has: the catalog's message, on the card.
  await page.fill(`${card} input.name-input`, taken);
  await page.click(`${card} button.save`);
  await page.waitForFunction((sel) => document.querySelector(sel + ' .error').textContent !== '', card, { timeout: TIMEOUT });
  // The name, from the page into the catalog.
  await page.fill(`${card} input.name-input`, name);
  await page.click(`${card} button.save`);
  await page.waitForSelector(`${card}[data-name="${name}"]`, { timeout: TIMEOUT });
  await waitPeople(page);
  const named = tandemPeople(args).find((p) => p.id === id);
  check(named && named.name === name, `tandem people --json after naming: ${JSON.stringify(named)}, expected name ${name}`);
  const option = await page.$$eval('#f-person option', (os, i) => os.filter((o) => o.value === String(i)).map((o) => o.textContent), id);
  check(option.length === 1 && option[0].startsWith(name), `the person filter does not list the new name: ${option}`);

  // Merge: the card of `from` merges into `into`.
  const { into, from } = expect.merge;
  const fromCard = `#people .person[data-id="${from}"]`;
  await page.selectOption(`${fromCard} select.merge-into`, String(into));
  await page.click(`${fromCard} button.merge`);
  await page.waitForSelector(fromCard, { state: 'detached', timeout: TIMEOUT });
  await waitPeople(page);
  const after = tandemPeople(args);
  check(!after.some((p) => p.id === from), `tandem people --json still lists person ${from} after the merge`);
  const merged = after.find((p) => p.id === into);
  const faces = expect.people[String(into)].faces + expect.people[String(from)].faces;
  check(merged && merged.faces === faces, `person ${into} has ${merged && merged.faces} faces after the merge, expected ${faces}`);
}

// ------------------------------------------------------------------ --web DIR

const PAGE_FILES = { 'index.html': 'text/html; charset=utf-8', 'app.js': 'text/javascript', 'style.css': 'text/css' };

// The server's page files answered from DIR.
async function routePageFiles(context, base, dir) {
  const origin = new URL(base).origin;
  await context.route((u) => u.origin === origin && ['/', '/index.html', '/app.js', '/style.css'].includes(u.pathname),
    (route) => {
      const name = new URL(route.request().url()).pathname.slice(1) || 'index.html';
      route.fulfill({ status: 200, contentType: PAGE_FILES[name], body: fs.readFileSync(path.join(dir, name)) });
    });
}

// A copy of the static gallery with DIR's page files.
function overlayStatic(staticDir, dir) {
  const copy = fs.mkdtempSync(path.join(require('os').tmpdir(), 'tandem-static-'));
  fs.cpSync(staticDir, copy, { recursive: true });
  for (const name of Object.keys(PAGE_FILES)) fs.copyFileSync(path.join(dir, name), path.join(copy, name));
  return copy;
}

// ------------------------------------------------------------------ main

async function main() {
  let args;
  try { args = parseArgs(process.argv.slice(2)); } catch (e) {
    console.error(e.message + '\nusage: node browser_test.js --url URL --expect FILE --artifacts DIR --tandem BIN --catalog CAT [--static DIR] [--tokenurl URL --token SECRET]');
    process.exit(2);
  }
  const playwright = loadPlaywright();
  if (!playwright) skip('no playwright-core (cd tools/node && npm ci)');
  const chromiumPath = findChromium(args.chromium);
  if (!chromiumPath) skip('no chromium (Debian package chromium)');

  const expect = JSON.parse(fs.readFileSync(args.expect, 'utf8'));
  fs.mkdirSync(args.artifacts, { recursive: true });
  const shot = (name) => path.join(args.artifacts, name + '.png');

  const browser = await playwright.chromium.launch({
    executablePath: chromiumPath, headless: true,
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    args: ['--no-sandbox', '--disable-gpu'],
  });
  const problems = [];
  let step = 'start';
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    if (args.web) await routePageFiles(context, args.url, args.web);
    const page = await context.newPage();
    page.setDefaultTimeout(TIMEOUT);
    page.on('pageerror', (e) => problems.push(`script error (${step}): ${e.message}`));
    page.on('dialog', (d) => { problems.push(`a dialog opened (${step}): ${d.message()}`); d.dismiss().catch(() => {}); });
    const apiPhotos = [];
    const apiPeople = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/photos')) apiPhotos.push(r.url());
      if (r.url().includes('/api/people')) apiPeople.push(r.url());
    });

    step = 'server grid';
    await openPage(page, args.url + '#limit=3');
    await page.waitForFunction(() => !!document.body.dataset.edits, null, { timeout: TIMEOUT });  // the summary is in
    check(await page.$eval('body', (b) => b.dataset.edits) === 'true', 'the server page does not have edits on (--allow-edits)');
    await checkGrid(page, expect, 'server');
    check(apiPhotos.some((u) => u.includes('cursor=')), 'no /api/photos request carried a cursor');
    // The first screen: one request for the first page, none for the people list.
    const firstPages = apiPhotos.filter((u) => !u.includes('cursor='));
    check(firstPages.length === 1, `the first screen asked for the first page ${firstPages.length} times: ${JSON.stringify(firstPages)}`);
    check(apiPeople.length === 0, `the first screen asked for ${JSON.stringify(apiPeople)}`);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: shot('grid') });
    step = 'server filters';
    await checkFilters(page, expect, 'server', shot('filtered'));
    step = 'server photo view';
    await checkPhotoViews(page, expect, 'server', shot('viewer'));
    step = 'server duplicates';
    await checkDuplicates(page, expect, 'server');
    step = 'server people';
    await checkPeoplePage(page, expect, 'server', shot('people'));
    step = 'server edits';
    await checkEdits(page, expect, args);

    if (args.tokenurl) {
      // A server that needs a token: without it the page says so and shows
      // nothing; with it (from the address, as the server prints it) the
      // grid, its thumbnails (the token in their query) and the duplicates
      // work as without one. (After the edits above: the people's names
      // are no longer expect's, so the photo views are not checked here.)
      step = 'token refused';
      await openPage(page, args.tokenurl + '#limit=3');
      await page.waitForFunction(() => document.querySelector('#grid').dataset.state === 'error', null, { timeout: TIMEOUT });
      const said = await page.textContent('#grid-status');
      check(/token/i.test(said), `without the token the grid says "${said}", not that a token is required`);
      check((await page.$$('#grid .photo')).length === 0, 'without the token the grid shows photos');
      // The token pasted into the open page's address (a change of hash,
      // not a new page): the page starts again with it.
      step = 'token given';
      await Promise.all([
        page.waitForNavigation({ timeout: TIMEOUT }),
        page.evaluate((t) => { location.hash = '#token=' + encodeURIComponent(t) + '&limit=3'; }, args.token),
      ]);
      await page.waitForFunction(() => document.body.dataset.mode === 'server', null, { timeout: TIMEOUT });
      await checkGrid(page, expect, 'token');
      await checkDuplicates(page, expect, 'token');
      // The next step opens another origin: the first page's state is left behind.
      await page.goto('about:blank');
    }

    if (args.static) {
      step = 'static gallery';
      const dir = args.web ? overlayStatic(args.static, args.web) : path.resolve(args.static);
      const address = url.pathToFileURL(path.join(dir, 'index.html')).href + '#limit=3';
      await openPage(page, address);
      check(await page.$eval('body', (b) => b.dataset.mode) === 'static', 'the static gallery did not find data.js');
      await checkGrid(page, expect, 'static');
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: shot('static') });
      await checkFilters(page, expect, 'static', null);
      await checkPhotoViews(page, expect, 'static', shot('static-viewer'));
      await checkDuplicates(page, expect, 'static');
      await checkPeoplePage(page, expect, 'static', null);
      check(await page.$('#people input.name-input') === null, 'the static gallery offers edits');
    }
    check(problems.length === 0, problems.join('\n'));
  } catch (e) {
    // A failed check, or a wait that timed out (a hook never appeared).
    console.error(`FAIL (${step}): ` + (e instanceof CheckFailed ? e.message : e.stack || e));
    if (problems.length) console.error(problems.join('\n'));
    for (const p of browser.contexts().flatMap((c) => c.pages()))
      await p.screenshot({ path: shot('failure') }).catch(() => {});
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
  if (!process.exitCode) console.log('gallery browser test: all checks passed; screenshots in ' + args.artifacts);
}

main().catch((e) => {
  console.error('FAIL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
