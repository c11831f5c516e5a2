// tandem gallery: one page over `tandem serve`'s JSON API (docs/GALLERY.md),
// or, opened from disk, over the data.js that `tandem gallery` writes.
// No framework and no build step: the files are compiled into the binary.
//
// Everything the API returns (file names above all) is inserted as text
// (textContent, createElement, setAttribute), never parsed as HTML.
//
// The address's hash holds the page's state, so reload and back keep it:
//   #view=grid|timeline|people|duplicates  &tag= &person= &from= &to=
//   &make= &model= &box= &q=  (the filters of GET /api/photos)
//   &photo=ID (the photo view) &limit=N (page size) &token=SECRET
//
// Stable DOM hooks (tests/gallery/browser_test.js relies on them):
//   body[data-mode="server"|"static"] [data-edits="true"|"false"]
//       [data-view="grid"|"timeline"|"people"|"duplicates"]
//   #f-q (search), select#f-tag, #f-person, #f-camera, #f-month, #f-clear
//     (#f-person lists people only once they are needed: its focus or
//     pointerdown, a person in the address, the people page; the first
//     screen does not ask for /api/people)
//   #grid[data-state="loading"|"more"|"end"|"error"][data-query][data-count][data-pages]
//     data-query: the filters shown, as the API's query string (no limit/cursor)
//   #grid .photo[data-id][data-name]  (a grid item; class .missing / .failed,
//     .badge.missing, .badge.failed, .badge.copies inside)
//   #timeline .month[data-month="YYYY-MM"]
//   #people[data-state="loading"|"end"|"error"]
//   #people .person[data-id][data-name]  (data-name "" when unnamed) holding
//     input.name-input + button.save and select.merge-into + button.merge
//     (only when edits are on), .error (the last edit's failure)
//   #duplicates .dup-group[data-hash] .photo[data-id][data-name]
//   #viewer (hidden when closed) [data-id][data-state="loading"|"ready"|"error"]
//     .stage img.full[data-fallback], .box.object[data-label][data-score],
//     .box.face[data-person][data-name] (data-person "" when no person),
//     dl.meta, ul.tags li[data-label], .duplicates .photo[data-id], .error, button.close
//   #message: the last error, as text
(function () {
  'use strict';

  const FILTER_KEYS = ['tag', 'person', 'from', 'to', 'make', 'model', 'box', 'q'];
  const VIEWS = ['grid', 'timeline', 'people', 'duplicates'];
  const DEFAULT_LIMIT = 60;

  const $ = (sel) => document.querySelector(sel);

  // ---------------------------------------------------------------- DOM helpers

  // el('a', {class: 'x', href: h, onclick: f}, 'text', child): strings become
  // text nodes, so data can never turn into markup.
  function el(tag, props, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v == null || v === false) continue;
      if (k === 'class') n.className = v;
      else if (k === 'dataset') for (const [d, dv] of Object.entries(v)) n.dataset[d] = String(dv);
      else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of kids.flat()) if (c != null && c !== false) n.append(c);
    return n;
  }

  // One formatter: toLocaleString('en-US') makes a new one per call, which
  // adds up over the summary's hundreds of counts.
  const countFormat = new Intl.NumberFormat('en-US');
  function fmtCount(n) { return countFormat.format(Number(n || 0)); }
  function fmtScore(s) { return Number(s).toFixed(2); }
  function fmtDate(t) { return t ? t.replace('T', ' ') : ''; }
  function fmtBytes(n) {
    if (n == null) return '';
    if (n < 1024) return n + ' B';
    if (n < 1024 * 1024) return (n / 1024).toFixed(0) + ' KiB';
    return (n / 1024 / 1024).toFixed(1) + ' MiB';
  }
  function personLabel(p) { return p.name != null && p.name !== '' ? p.name : 'Unnamed #' + p.id; }

  // "2021-07" -> "2021-08".
  function nextMonth(m) {
    let [y, mo] = m.split('-').map(Number);
    if (++mo > 12) { mo = 1; y++; }
    return String(y).padStart(4, '0') + '-' + String(mo).padStart(2, '0');
  }

  // ---------------------------------------------------------------- hash state

  function clampInt(text, lo, hi, dflt) {
    const n = parseInt(text, 10);
    return Number.isFinite(n) ? Math.min(hi, Math.max(lo, n)) : dflt;
  }

  function readHash() {
    const p = new URLSearchParams(location.hash.replace(/^#/, ''));
    const filters = {};
    for (const k of FILTER_KEYS) if (p.get(k)) filters[k] = p.get(k);
    return {
      view: VIEWS.includes(p.get('view')) ? p.get('view') : 'grid',
      filters,
      photo: p.get('photo') || null,
      limit: clampInt(p.get('limit'), 1, 200, DEFAULT_LIMIT),
      token: p.get('token') || null,
    };
  }

  // Keys in a fixed order, defaults left out, so equal states give equal hashes.
  function hashOf(s) {
    const p = new URLSearchParams();
    if (s.view !== 'grid') p.set('view', s.view);
    for (const k of FILTER_KEYS) if (s.filters[k]) p.set(k, s.filters[k]);
    if (s.photo) p.set('photo', s.photo);
    if (s.limit !== DEFAULT_LIMIT) p.set('limit', s.limit);
    if (s.token) p.set('token', s.token);
    return '#' + p.toString();
  }

  function filterQuery(filters) {
    const p = new URLSearchParams();
    for (const k of FILTER_KEYS) if (filters[k]) p.set(k, filters[k]);
    return p.toString();
  }

  let state = readHash();

  function hrefFor(changes) { return hashOf({ ...state, ...changes }); }

  // replace: a step that should not be its own history entry (typing).
  function navigate(changes, replace) {
    const h = hrefFor(changes);
    if (h === location.hash || (h === '#' && !location.hash)) return;
    if (replace) { history.replaceState(null, '', h); route(); }
    else location.hash = h;  // hashchange runs route()
  }

  // ---------------------------------------------------------------- data sources
  // Both answer the same calls with promises of the API's JSON shapes;
  // thumb() and full() give image URLs.

  function ServerSource(token) {
    const headers = token ? { 'X-Tandem-Token': token } : {};
    // Images cannot carry a header, so the token goes in their query.
    const withToken = (url) =>
      token ? url + (url.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(token) : url;

    async function call(path, init) {
      const r = await fetch(path, { ...init, headers: { ...headers, ...(init && init.headers) } });
      let body = null;
      try { body = await r.json(); } catch (e) { /* not JSON: report the status */ }
      if (!r.ok) throw new Error((body && body.error) || r.status + ' ' + r.statusText);
      return body;
    }
    const post = (path, data) =>
      call(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(data) });
    const query = (o) => {
      const p = new URLSearchParams();
      for (const [k, v] of Object.entries(o)) if (v != null && v !== '') p.set(k, v);
      return p.toString();
    };

    return {
      mode: 'server',
      summary: () => call('api/summary'),
      photos: (filters, cursor, limit) => call('api/photos?' + query({ ...filters, limit, cursor })),
      photo: (id) => call('api/photo/' + encodeURIComponent(id)),
      people: () => call('api/people').then((a) => a.people),
      duplicates: (cursor, limit) => call('api/duplicates?' + query({ limit, cursor })),
      rename: (id, name) => post('api/people/' + encodeURIComponent(id) + '/name', { name }),
      merge: (into, from) => post('api/people/merge', { into: Number(into), from: Number(from) }),
      thumb: (id, size) => withToken('thumb/' + encodeURIComponent(id) + (size === 'large' ? '?size=large' : '')),
      full: (id) => withToken('photo/' + encodeURIComponent(id)),
    };
  }

  // The static gallery: data.js holds every photo's /api/photo object, so
  // filtering, ordering and paging happen here, the way the server does them.
  function StaticSource(data) {
    const list = (x, key) => (Array.isArray(x) ? x : (x && x[key]) || []);
    const photos = list(data.photos, 'photos').slice().sort(newestFirst);
    const byId = new Map(photos.map((p) => [String(p.id), p]));
    const people = list(data.people, 'people');
    const summary = { ...data.summary, edits: false, static: true };
    const none = () => Promise.reject(new Error('the static gallery cannot be edited'));

    // Newest date taken first, then undated, newest tagged (highest id) first.
    function newestFirst(a, b) {
      if (a.taken_at && b.taken_at && a.taken_at !== b.taken_at) return a.taken_at < b.taken_at ? 1 : -1;
      if (!a.taken_at !== !b.taken_at) return a.taken_at ? -1 : 1;
      return b.id - a.id;
    }
    // As the server reads them: a month "YYYY-MM" as `from` is its first
    // day; as `to` it is included, so the range ends where the next begins.
    const isMonth = (d) => /^\d{4}-\d{2}$/.test(d);
    const fromDay = (d) => (isMonth(d) ? d + '-01' : d);
    const toDay = (d) => (isMonth(d) ? nextMonth(d) + '-01' : d);

    function labels(p) {
      return [...(p.tags || []), ...(p.objects || [])].map((t) => String(t.label));
    }
    function matchesWord(p, w) {
      if (labels(p).some((l) => l.toLowerCase().startsWith(w))) return true;
      for (const f of p.faces || [])
        if (f.person && f.person.name && f.person.name.toLowerCase().split(/\s+/).some((x) => x.startsWith(w)))
          return true;
      return String(p.path || p.name).toLowerCase().includes(w);
    }
    function inBox(m, box) {
      const [s, w, n, e] = box.split(',').map(Number);
      if (!m || m.latitude == null || m.longitude == null) return false;
      const lonOk = w <= e ? m.longitude >= w && m.longitude <= e : m.longitude >= w || m.longitude <= e;
      return m.latitude >= s && m.latitude <= n && lonOk;
    }
    function matches(p, f) {
      const m = p.meta || {};
      if (f.tag && !labels(p).includes(f.tag)) return false;
      if (f.person && !(p.faces || []).some((x) => x.person && String(x.person.id) === String(f.person))) return false;
      if (f.from && !(p.taken_at && p.taken_at >= fromDay(f.from))) return false;
      if (f.to && !(p.taken_at && p.taken_at < toDay(f.to))) return false;
      if (f.make && m.make !== f.make) return false;
      if (f.model && m.model !== f.model) return false;
      if (f.box && !inBox(p.meta, f.box)) return false;
      if (f.q) for (const w of f.q.toLowerCase().split(/\s+/).filter(Boolean)) if (!matchesWord(p, w)) return false;
      return true;
    }
    // The cursor is an offset: the data does not change under a static page.
    function page(items, cursor, limit) {
      const at = parseInt(cursor || '0', 10) || 0;
      const end = at + limit;
      return { items: items.slice(at, end), next: end < items.length ? String(end) : null };
    }
    // Exact duplicates: each photo lists the others with its content.
    function groups() {
      const seen = new Set();
      const out = [];
      for (const p of photos) {
        if (!p.duplicates || !p.duplicates.length) continue;
        const ids = [p.id, ...p.duplicates].map(String);
        const key = ids.slice().sort().join(',');
        if (seen.has(key)) continue;
        seen.add(key);
        const members = photos.filter((x) => ids.includes(String(x.id)));
        out.push({ hash: p.content_hash || key, photos: members });
      }
      return out;
    }

    return {
      mode: 'static',
      summary: () => Promise.resolve(summary),
      photos: (filters, cursor, limit) => {
        const r = page(photos.filter((p) => matches(p, filters)), cursor, limit);
        return Promise.resolve({ photos: r.items, next: r.next });
      },
      photo: (id) => (byId.has(String(id)) ? Promise.resolve(byId.get(String(id)))
        : Promise.reject(new Error('no photo ' + id))),
      people: () => Promise.resolve(people),
      duplicates: (cursor, limit) => {
        const r = page(groups(), cursor, limit);
        return Promise.resolve({ groups: r.items, next: r.next });
      },
      rename: none,
      merge: none,
      thumb: (id, size) => 'thumbs/' + encodeURIComponent(id) + (size === 'large' ? '-large.png' : '-normal.png'),
      // A page from disk shows the large thumbnail, not the photo.
      full: (id) => 'thumbs/' + encodeURIComponent(id) + '-large.png',
    };
  }

  const source = window.TANDEM_DATA ? StaticSource(window.TANDEM_DATA) : ServerSource(state.token);
  let summary = null;
  // Settles (never rejects) once /api/summary has answered or failed.
  let summaryArrived;
  const summaryReady = new Promise((ok) => { summaryArrived = ok; });
  // The people list is not part of the first screen (on a large catalog
  // /api/people takes seconds): it is asked for when something needs it,
  // see wantPeople(). null until it has answered once.
  let people = null;
  let peopleAsked = null;  // the latest /api/people promise; null: not asked (or it failed)

  // ---------------------------------------------------------------- messages

  function showError(err) {
    const m = $('#message');
    m.replaceChildren(el('span', {}, String(err && err.message ? err.message : err)),
      el('button', { type: 'button', class: 'dismiss', 'aria-label': 'Dismiss', onclick: () => { m.hidden = true; } }, '×'));
    m.hidden = false;
  }

  // ---------------------------------------------------------------- paged lists

  // A list that pages in as its sentinel nears the viewport. reset() starts a
  // new generation: an answer for an older one, arriving late, is dropped.
  // Nothing loads before the first reset(): the observer's first report
  // must not ask for a page that the reset would ask for again.
  function Feed(list, sentinel, status, load, render, emptyText) {
    let started = false;
    let gen = 0;
    let loadingGen = -1;
    let cursor = null;
    let done = false;
    let pages = 0;
    let count = 0;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) more();
    }, { rootMargin: '0px 0px 600px 0px' });
    observer.observe(sentinel);

    function setState(s, text) {
      list.dataset.state = s;
      list.dataset.count = count;
      list.dataset.pages = pages;
      status.textContent = text || '';
    }
    async function more() {
      if (!started || done || loadingGen === gen) return;
      const mine = (loadingGen = gen);
      try {
        const page = await load(cursor);
        if (mine !== gen) return;
        // One insertion for the whole page; render(item, index in the list).
        const frag = document.createDocumentFragment();
        page.items.forEach((item, i) => frag.append(render(item, count + i)));
        list.append(frag);
        count += page.items.length;
        pages++;
        cursor = page.next;
        done = page.next == null;
        setState(done ? 'end' : 'more', done && !count ? emptyText : '');
      } catch (e) {
        if (mine !== gen) return;
        done = true;  // no retry loop; reload or change a filter to try again
        setState('error', 'Could not load: ' + e.message);
        showError(e);
      } finally {
        if (mine === gen) {
          loadingGen = -1;
          // IntersectionObserver reports changes only: a page that did not
          // push the sentinel out of view would never ask for the next one.
          // Observing again makes it report the sentinel's current state.
          if (!done) recheck();
        }
      }
    }
    function recheck() { observer.unobserve(sentinel); observer.observe(sentinel); }
    return {
      key: null,
      // key: what the list shows (reset when it changes); query: its data-query.
      reset(key, query) {
        this.key = key;
        started = true;
        gen++;
        cursor = null; done = false; pages = 0; count = 0;
        list.replaceChildren();
        list.dataset.query = query;
        setState('loading', 'Loading…');
        more();
      },
      recheck,
    };
  }

  // ---------------------------------------------------------------- photo tiles

  function placeholder(text) { return el('div', { class: 'placeholder' }, text); }

  // A thumbnail that turns into a placeholder instead of a broken image.
  // Tiles are wider than the normal thumbnail (128 px): the browser takes the
  // large one (256 px) where the tile's pixels need it. eager: 1 on the
  // first screen, asked for at once rather than after the lazy loader's
  // layout pass (`loading` is set before `src`, which it must precede to take
  // effect); 2 in its first row, also ahead of other images.
  function thumbImg(id, alt, sizes, eager) {
    return el('img', {
      class: 'thumb', alt, loading: eager ? 'eager' : 'lazy', fetchpriority: eager > 1 ? 'high' : null,
      decoding: 'async', src: source.thumb(id, 'normal'),
      srcset: source.thumb(id, 'normal') + ' 128w, ' + source.thumb(id, 'large') + ' 256w', sizes,
      onerror: (e) => e.target.replaceWith(placeholder('no preview')),
    });
  }

  function tile(p, opts) {
    const cls = ['photo'];
    if (p.missing) cls.push('missing');
    if (p.status === 'failed') cls.push('failed');
    const a = el('a', {
      class: cls.join(' '), href: hrefFor({ photo: String(p.id) }), title: p.path || p.name,
      dataset: { id: p.id, name: p.name },
    });
    // A missing photo has no thumbnail to ask for (the server answers 404).
    a.append(p.missing ? placeholder('missing') : thumbImg(p.id, p.name, '180px', opts && opts.eager));
    const badges = el('span', { class: 'badges' });
    if (p.missing) badges.append(el('span', { class: 'badge missing' }, 'missing'));
    if (p.status === 'failed') badges.append(el('span', { class: 'badge failed' }, 'failed'));
    if (p.copies > 1) badges.append(el('span', { class: 'badge copies', title: p.copies + ' copies' }, '×' + p.copies));
    a.append(badges, el('span', { class: 'caption' },
      el('span', { class: 'name' }, opts && opts.path ? p.path : p.name),
      p.taken_at ? el('span', { class: 'date' }, p.taken_at.slice(0, 10)) : null));
    return a;
  }

  // The grid's columns and the tiles on the first screen, over- rather than
  // under-counted: from the window's size and the tiles' least size (--tile:
  // 168 px, gap 10 px), so no layout is read.
  function firstScreenTiles() {
    const cols = Math.max(1, Math.floor((window.innerWidth + 10) / 178));
    const rows = Math.max(1, Math.ceil(window.innerHeight / 178));
    return { cols, tiles: cols * rows };
  }

  let firstScreen = { cols: 0, tiles: 0 };  // measured as the grid's first page is asked for
  const grid = Feed($('#grid'), $('#grid-sentinel'), $('#grid-status'),
    (cursor) => {
      if (cursor == null) firstScreen = firstScreenTiles();
      return source.photos(state.filters, cursor, state.limit).then((r) => ({ items: r.photos, next: r.next }));
    },
    (p, i) => tile(p, { eager: i < firstScreen.cols ? 2 : i < firstScreen.tiles ? 1 : 0 }), 'No photos match.');

  const dups = Feed($('#duplicates'), $('#dup-sentinel'), $('#dup-status'),
    (cursor) => source.duplicates(cursor, Math.min(state.limit, 50)).then((r) => ({ items: r.groups, next: r.next })),
    (g) => el('div', { class: 'dup-group', dataset: { hash: g.hash } },
      el('h3', {}, g.photos.length + ' copies'),
      el('div', { class: 'row' }, g.photos.map((p) => tile(p, { path: true })))), 'No exact duplicates.');

  // ---------------------------------------------------------------- filters

  function option(value, text, selected) {
    const o = el('option', { value }, text);
    o.selected = !!selected;
    return o;
  }

  function fillFilters() {
    const f = state.filters;
    const tags = (summary && summary.tags) || [];
    const tagSel = $('#f-tag');
    tagSel.replaceChildren(option('', 'Any tag'),
      ...tags.map((t) => option(t.label, t.label + ' (' + fmtCount(t.count) + ')', t.label === f.tag)));
    // A tag from the address that is not among the listed ones still shows.
    if (f.tag && !tags.some((t) => t.label === f.tag)) tagSel.append(option(f.tag, f.tag, true));

    const personSel = $('#f-person');
    const known = people || [];
    personSel.replaceChildren(option('', 'Anyone'),
      ...known.map((p) => option(String(p.id), personLabel(p) + ' (' + fmtCount(p.faces) + ')', String(p.id) === f.person)));
    if (f.person && !known.some((p) => String(p.id) === f.person)) personSel.append(option(f.person, '#' + f.person, true));
    if (!people && peopleAsked) {
      const wait = option('loading', 'Loading people…');
      wait.disabled = true;
      personSel.append(wait);
    }

    const cams = (summary && summary.cameras) || [];
    const camSel = $('#f-camera');
    const camKey = (make, model) => JSON.stringify([make || '', model || '']);
    const current = f.make || f.model ? camKey(f.make, f.model) : '';
    camSel.replaceChildren(option('', 'Any camera'),
      ...cams.map((c) => option(camKey(c.make, c.model),
        [c.make, c.model].filter(Boolean).join(' ') + ' (' + fmtCount(c.count) + ')', camKey(c.make, c.model) === current)));
    if (current && camSel.value !== current) camSel.append(option(current, [f.make, f.model].filter(Boolean).join(' '), true));

    const months = (summary && summary.months) || [];
    const monthSel = $('#f-month');
    // One month is from=M&to=M (the API includes a `to` month).
    const oneMonth = f.from && /^\d{4}-\d{2}$/.test(f.from) && f.to === f.from ? f.from : null;
    monthSel.replaceChildren(option('', 'Any month'),
      ...months.map((m) => option(m.month, m.month + ' (' + fmtCount(m.count) + ')', m.month === oneMonth)));
    if (oneMonth && monthSel.value !== oneMonth) monthSel.append(option(oneMonth, oneMonth, true));
    if ((f.from || f.to) && !oneMonth) monthSel.append(option('custom', (f.from || '…') + ' – ' + (f.to || '…'), true));

    const q = $('#f-q');
    if (document.activeElement !== q) q.value = f.q || '';

    // A place box has no control of its own (it comes from an address): a chip clears it.
    const extra = $('#f-extra');
    extra.replaceChildren();
    if (f.box) extra.append(el('button', { type: 'button', class: 'chip', onclick: () => setFilters({ box: null }) },
      'place ' + f.box + ' ×'));
  }

  // Filters belong to the grid: changing one shows it.
  function setFilters(changes, replace) {
    const filters = { ...state.filters };
    for (const [k, v] of Object.entries(changes)) if (v) filters[k] = v; else delete filters[k];
    navigate({ filters, view: 'grid', photo: null }, replace);
  }

  function wireFilters() {
    $('#f-tag').addEventListener('change', (e) => setFilters({ tag: e.target.value }));
    const personSel = $('#f-person');
    personSel.addEventListener('change', (e) => setFilters({ person: e.target.value }));
    // The list of people comes when the select is about to be used.
    personSel.addEventListener('pointerdown', wantPeople);
    personSel.addEventListener('focus', wantPeople);
    $('#f-camera').addEventListener('change', (e) => {
      const [make, model] = e.target.value ? JSON.parse(e.target.value) : ['', ''];
      setFilters({ make, model });
    });
    $('#f-month').addEventListener('change', (e) => {
      const m = e.target.value;
      if (m === 'custom') return;
      setFilters({ from: m, to: m });
    });
    // Typing replaces the history entry rather than adding one per key. A
    // search that is already shown is no step at all: a late timer must not
    // pull the page back to the grid after a click elsewhere.
    let timer = 0;
    const q = $('#f-q');
    const search = () => {
      clearTimeout(timer);
      const text = q.value.trim();
      if (text !== (state.filters.q || '')) setFilters({ q: text }, true);
    };
    q.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(search, 250); });
    q.addEventListener('keydown', (e) => { if (e.key === 'Enter') search(); });
    $('#f-clear').addEventListener('click', () => {
      clearTimeout(timer);
      q.value = '';
      navigate({ filters: {}, view: 'grid', photo: null });
    });
    for (const b of document.querySelectorAll('nav.views button'))
      b.addEventListener('click', () => navigate({ view: b.dataset.view, photo: null }));
  }

  // ---------------------------------------------------------------- timeline

  // Built when the timeline is shown (a large catalog has hundreds of
  // months: not work for the first screen), again when the summary changes.
  let timelineOf;  // the summary the timeline shows
  function showTimeline() {
    if (state.view === 'timeline' && summary && timelineOf !== summary) renderTimeline();
  }

  function renderTimeline() {
    timelineOf = summary;
    const box = $('#timeline');
    const months = (summary && summary.months) || [];
    const max = Math.max(1, ...months.map((m) => m.count));
    const years = new Map();
    for (const m of months) {
      const y = m.month.slice(0, 4);
      if (!years.has(y)) years.set(y, []);
      years.get(y).push(m);
    }
    const names = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
    box.replaceChildren(...[...years].map(([y, ms]) => el('div', { class: 'year' },
      el('h3', {}, y, el('span', { class: 'count' }, fmtCount(ms.reduce((s, m) => s + m.count, 0)))),
      el('div', { class: 'months' }, ms.map((m) => {
        const b = el('button', {
          type: 'button', class: 'month', dataset: { month: m.month }, title: m.month + ': ' + fmtCount(m.count) + ' photos',
          onclick: () => setFilters({ from: m.month, to: m.month }),
        }, el('span', { class: 'bar' }), el('span', { class: 'label' }, names[Number(m.month.slice(5, 7)) - 1] || m.month),
        el('span', { class: 'count' }, fmtCount(m.count)));
        b.firstChild.style.height = Math.max(4, Math.round((m.count / max) * 100)) + '%';
        return b;
      })))));
    if (!months.length) box.append(el('p', { class: 'status' }, 'No photo has a date taken.'));
    if (summary && summary.undated) box.append(el('p', { class: 'status' }, fmtCount(summary.undated) + ' photos have no date.'));
  }

  // ---------------------------------------------------------------- people

  const photoSizes = new Map();  // photo id -> {width, height}: a person card's crop needs them

  function photoSize(id) {
    if (!photoSizes.has(id)) photoSizes.set(id, source.photo(id).then((p) => ({ width: p.width, height: p.height })));
    return photoSizes.get(id);
  }

  // The person's best face cut from the large thumbnail: the box is in
  // pixels of the full-size photo, the thumbnail is that photo scaled down
  // (256 px on its longer side), so the scale is its width over the photo's.
  function faceCrop(person) {
    const frame = el('div', { class: 'crop' });
    if (!person.photo || !person.box) { frame.append(placeholder('?')); return frame; }
    const img = el('img', { alt: '', src: source.thumb(person.photo, 'large') });
    img.addEventListener('error', () => img.replaceWith(placeholder('no preview')));
    frame.append(img);
    const loaded = img.complete && img.naturalWidth ? Promise.resolve()
      : new Promise((ok, fail) => { img.addEventListener('load', ok); img.addEventListener('error', fail); });
    Promise.all([loaded, photoSize(person.photo)]).then(([, size]) => {
      if (!size.width || !size.height) return;
      const s = img.naturalWidth / size.width;
      const [x1, y1, x2, y2] = person.box.map((v) => v * s);
      // A square a bit larger than the face, centred on it, fills the frame;
      // percentages of the (square) frame keep it right at any size.
      const side = Math.max(x2 - x1, y2 - y1) * 1.4 || 1;
      const left = (x1 + x2) / 2 - side / 2;
      const top = (y1 + y2) / 2 - side / 2;
      img.classList.add('placed');
      img.style.width = (img.naturalWidth / side) * 100 + '%';
      img.style.left = (-left / side) * 100 + '%';
      img.style.top = (-top / side) * 100 + '%';
    }).catch(() => { /* the whole thumbnail stays, covering the frame */ });
    return frame;
  }

  async function edit(card, action) {
    const err = card.querySelector('.error');
    err.textContent = '';
    for (const c of card.querySelectorAll('button, input, select')) c.disabled = true;
    try {
      await action();
      await refreshAfterEdit();
    } catch (e) {
      err.textContent = e.message;
      for (const c of card.querySelectorAll('button, input, select')) c.disabled = false;
    }
  }

  function editControls(p, card) {
    const input = el('input', { class: 'name-input', type: 'text', placeholder: 'Name', 'aria-label': 'Name', maxlength: 200 });
    input.value = p.name || '';
    const rename = el('form', {
      class: 'rename',
      onsubmit: (e) => { e.preventDefault(); edit(card, () => source.rename(p.id, input.value.trim())); },
    }, input, el('button', { type: 'submit', class: 'save' }, 'Save'));
    const others = (people || []).filter((o) => o.id !== p.id);
    if (!others.length) return [rename];
    // Merging moves this person's faces into the one chosen (merge B into A).
    const into = el('select', { class: 'merge-into', 'aria-label': 'Merge into' },
      option('', 'Same as…', true), others.map((o) => option(String(o.id), personLabel(o))));
    const merge = el('div', { class: 'merge-row' }, into,
      el('button', {
        type: 'button', class: 'merge',
        onclick: () => edit(card, () => (into.value ? source.merge(into.value, p.id)
          : Promise.reject(new Error('Choose the person to merge into.')))),
      }, 'Merge'));
    return [rename, merge];
  }

  function personCard(p) {
    const card = el('div', { class: 'person', dataset: { id: p.id, name: p.name || '' } });
    const photos = el('a', { href: hrefFor({ view: 'grid', filters: { person: String(p.id) }, photo: null }) }, faceCrop(p));
    card.append(photos,
      el('h3', { class: p.name ? 'name' : 'name unnamed' }, personLabel(p)),
      el('a', { class: 'faces', href: photos.getAttribute('href') }, fmtCount(p.faces) + (p.faces === 1 ? ' face' : ' faces')));
    if (summary && summary.edits) card.append(...editControls(p, card));
    card.append(el('p', { class: 'error', role: 'status' }));
    return card;
  }

  // Reads the people list (again: names and counts change with edits). The
  // latest request is the one that counts.
  function loadPeople() {
    const asked = source.people().then((list) => {
      if (peopleAsked === asked) { people = list; fillFilters(); }
      return list;
    }, (e) => {
      if (peopleAsked === asked) { peopleAsked = null; fillFilters(); }  // the next need asks again
      throw e;
    });
    peopleAsked = asked;
    if (!people) fillFilters();  // "Loading people…" in the person filter
    return asked;
  }

  // The people list when something needs it and it has not been asked for:
  // the person filter is about to be used, or the address names a person.
  function wantPeople() {
    if (!peopleAsked) loadPeople().catch(showError);
  }

  async function renderPeople() {
    const box = $('#people');
    box.dataset.state = 'loading';
    try {
      const list = await loadPeople();
      await summaryReady;  // the cards' edit controls depend on summary.edits
      box.replaceChildren(...list.map(personCard));
      if (!list.length) box.append(el('p', { class: 'status' }, 'No faces found yet (tag with --faces).'));
      box.dataset.state = 'end';
    } catch (e) {
      box.dataset.state = 'error';
      showError(e);
    }
  }

  // Names and counts change everywhere: read everything again.
  async function refreshAfterEdit() {
    summary = await source.summary();
    showSummary();
    grid.key = null;  // the grid reloads when next shown (person filters, search by name)
    await renderPeople();
    if (state.photo) openViewer(state.photo);
  }

  // ---------------------------------------------------------------- photo view

  let viewerGen = 0;
  let viewerOpen = null;

  function box(kind, b, photo, label) {
    const [x1, y1, x2, y2] = b;
    const pct = (v, of) => (of ? (v / of) * 100 : 0) + '%';
    const d = el('div', { class: 'box ' + kind }, el('span', { class: 'label' }, label));
    // Percentages of the stage, which has the photo's aspect ratio: the boxes
    // follow whatever size the photo is shown at.
    Object.assign(d.style, {
      left: pct(x1, photo.width), top: pct(y1, photo.height),
      width: pct(x2 - x1, photo.width), height: pct(y2 - y1, photo.height),
    });
    return d;
  }

  function stage(p) {
    const s = el('div', { class: 'stage' });
    const ratio = p.width > 0 && p.height > 0 ? p.width / p.height : 4 / 3;
    s.style.setProperty('--ratio', String(ratio));
    if (p.missing) {
      s.append(placeholder('missing'));
    } else {
      const img = el('img', { class: 'full', alt: p.name, src: source.full(p.id) });
      // The photo's own format may be one a browser cannot show (415):
      // the large thumbnail instead, and a placeholder when that fails too.
      img.addEventListener('error', () => {
        const large = source.thumb(p.id, 'large');
        if (!img.dataset.fallback && img.getAttribute('src') !== large) {
          img.dataset.fallback = 'thumb';
          img.src = large;
        } else {
          img.replaceWith(placeholder(p.status === 'failed' ? 'could not be read' : 'no preview'));
        }
      });
      s.append(img);
    }
    for (const o of p.objects || []) {
      const d = box('object', o.box, p, o.label + ' ' + fmtScore(o.score));
      d.dataset.label = o.label;
      d.dataset.score = o.score;
      s.append(d);
    }
    for (const f of p.faces || []) {
      const name = f.person ? (f.person.name || 'unnamed') : 'unnamed';
      const d = box('face', f.box, p, name + ' ' + fmtScore(f.score));
      d.dataset.person = f.person ? f.person.id : '';
      d.dataset.name = name;
      s.append(d);
    }
    return s;
  }

  function metaList(p) {
    const m = p.meta || {};
    const rows = [];
    const add = (k, v) => { if (v != null && v !== '') rows.push(el('dt', {}, k), el('dd', {}, String(v))); };
    add('Date', m.taken_at || p.taken_at ? fmtDate(m.taken_at || p.taken_at) + (m.taken_offset ? ' ' + m.taken_offset : '') : 'unknown');
    add('Camera', [m.make, m.model].filter(Boolean).join(' '));
    add('Lens', m.lens);
    const exp = [];
    if (m.exposure_s) exp.push(m.exposure_s < 1 ? '1/' + Math.round(1 / m.exposure_s) + ' s' : m.exposure_s + ' s');
    if (m.f_number) exp.push('f/' + m.f_number);
    if (m.iso) exp.push('ISO ' + m.iso);
    if (m.focal_length_mm) exp.push(m.focal_length_mm + ' mm');
    add('Exposure', exp.join(', '));
    // Plain text, no map link: nothing leaves the machine.
    if (m.latitude != null && m.longitude != null) {
      const lat = Math.abs(m.latitude).toFixed(5) + '° ' + (m.latitude >= 0 ? 'N' : 'S');
      const lon = Math.abs(m.longitude).toFixed(5) + '° ' + (m.longitude >= 0 ? 'E' : 'W');
      add('GPS', lat + ', ' + lon + (m.altitude_m != null ? ', ' + Math.round(m.altitude_m) + ' m' : ''));
    }
    add('Size', (p.width && p.height ? p.width + ' × ' + p.height : '') + (p.size ? ', ' + fmtBytes(p.size) : ''));
    add('Path', p.path);
    return el('dl', { class: 'meta' }, rows);
  }

  function sidePanel(p) {
    const side = el('div', { class: 'side' });
    side.append(el('h2', { class: 'name' }, p.name));
    const badges = el('div', { class: 'badges' });
    if (p.missing) badges.append(el('span', { class: 'badge missing' }, 'missing'));
    if (p.status === 'failed') badges.append(el('span', { class: 'badge failed' }, 'failed'));
    side.append(badges);
    if (p.error) side.append(el('p', { class: 'error' }, p.error));
    side.append(metaList(p));

    const tags = p.tags || [];
    if (tags.length) side.append(el('h3', {}, 'Tags'), el('ul', { class: 'tags' }, tags.map((t) =>
      el('li', { dataset: { label: t.label } },
        el('a', { href: hrefFor({ view: 'grid', filters: { tag: t.label }, photo: null }) }, t.label),
        el('span', { class: 'score' }, fmtScore(t.score))))));

    const named = new Map();
    for (const f of p.faces || []) if (f.person) named.set(String(f.person.id), f.person);
    const unknown = (p.faces || []).filter((f) => !f.person).length;
    if (named.size || unknown) side.append(el('h3', {}, 'People'), el('ul', { class: 'people-list' },
      [...named.values()].map((x) => el('li', { dataset: { person: x.id } },
        el('a', { href: hrefFor({ view: 'grid', filters: { person: String(x.id) }, photo: null }) }, personLabel(x)))),
      unknown ? el('li', {}, unknown + ' face' + (unknown === 1 ? '' : 's') + ' without a person') : null));

    if (p.duplicates && p.duplicates.length) side.append(el('h3', {}, 'Duplicates'),
      el('div', { class: 'duplicates' }, p.duplicates.map((id) =>
        el('a', { class: 'photo', href: hrefFor({ photo: String(id) }), dataset: { id }, title: 'photo ' + id },
          thumbImg(id, 'photo ' + id, '96px')))));
    return side;
  }

  // The grid item before or after the one shown (arrow keys, buttons).
  function neighbour(id, step) {
    const items = [...document.querySelectorAll('#grid .photo')];
    const i = items.findIndex((a) => a.dataset.id === String(id));
    return i < 0 ? null : items[i + step] || null;
  }

  function viewerFrame(content) {
    const v = $('#viewer');
    const prev = neighbour(v.dataset.id, -1);
    const next = neighbour(v.dataset.id, 1);
    v.replaceChildren(el('div', { class: 'viewer-bar' },
      el('button', { type: 'button', class: 'prev', disabled: !prev, onclick: () => step(-1), 'aria-label': 'Previous' }, '‹'),
      el('button', { type: 'button', class: 'next', disabled: !next, onclick: () => step(1), 'aria-label': 'Next' }, '›'),
      el('label', { class: 'toggle' }, el('input', {
        type: 'checkbox', class: 'show-boxes', checked: true,
        onchange: (e) => v.classList.toggle('no-boxes', !e.target.checked),
      }), ' boxes'),
      el('button', { type: 'button', class: 'close', onclick: closeViewer, 'aria-label': 'Close' }, '×')),
    content);
  }

  async function openViewer(id) {
    const v = $('#viewer');
    const mine = ++viewerGen;
    viewerOpen = id;
    v.hidden = false;
    v.dataset.id = id;
    v.dataset.state = 'loading';
    document.body.classList.add('viewing');
    viewerFrame(el('div', { class: 'viewer-body' }, el('p', { class: 'status' }, 'Loading…')));
    try {
      const p = await source.photo(id);
      if (mine !== viewerGen) return;
      viewerFrame(el('div', { class: 'viewer-body' }, el('div', { class: 'stage-wrap' }, stage(p)), sidePanel(p)));
      v.dataset.state = 'ready';
      v.querySelector('.close').focus({ preventScroll: true });
    } catch (e) {
      if (mine !== viewerGen) return;
      viewerFrame(el('div', { class: 'viewer-body' }, el('p', { class: 'error' }, e.message)));
      v.dataset.state = 'error';
    }
  }

  function hideViewer() {
    const v = $('#viewer');
    viewerGen++;
    viewerOpen = null;
    v.hidden = true;
    v.replaceChildren();
    delete v.dataset.id;
    delete v.dataset.state;
    document.body.classList.remove('viewing');
  }

  function closeViewer() { navigate({ photo: null }); }

  function step(dir) {
    const n = neighbour($('#viewer').dataset.id, dir);
    if (n) { navigate({ photo: n.dataset.id }, true); n.scrollIntoView({ block: 'nearest' }); }
  }

  function wireViewer() {
    const v = $('#viewer');
    // A click on the dark backdrop (not the photo or the panel) closes.
    v.addEventListener('click', (e) => {
      if (e.target === v || e.target.classList.contains('viewer-body') || e.target.classList.contains('stage-wrap'))
        closeViewer();
    });
    document.addEventListener('keydown', (e) => {
      if (v.hidden) return;
      if (e.key === 'Escape') { e.preventDefault(); closeViewer(); }
      else if (e.key === 'ArrowLeft' && !/INPUT|SELECT|TEXTAREA/.test(e.target.tagName)) step(-1);
      else if (e.key === 'ArrowRight' && !/INPUT|SELECT|TEXTAREA/.test(e.target.tagName)) step(1);
    });
  }

  // ---------------------------------------------------------------- routing

  function showSummary() {
    const s = summary;
    if (!s) return;
    const parts = [fmtCount(s.photos) + ' photos', fmtCount(s.people) + ' people'];
    if (s.failed) parts.push(fmtCount(s.failed) + ' failed');
    if (s.model) parts.push(s.model);
    if (s.static) parts.push('static');
    $('#summary').textContent = parts.join(' · ');
    document.body.dataset.edits = String(!!s.edits);
    fillFilters();
    showTimeline();
  }

  function route() {
    const prev = state;
    state = readHash();
    // A token pasted into the address of an open page (after "token
    // required"): every request must carry the new one, so start afresh.
    if (prev && !window.TANDEM_DATA && state.token !== prev.token) {
      location.reload();
      return;
    }
    document.body.dataset.view = state.view;
    for (const v of VIEWS) $('#view-' + v).hidden = v !== state.view;
    for (const b of document.querySelectorAll('nav.views button'))
      b.setAttribute('aria-current', b.dataset.view === state.view ? 'page' : 'false');
    fillFilters();

    // The grid keeps its items (and scroll) until its filters change.
    const query = filterQuery(state.filters);
    const key = query + '|' + state.limit;
    if (state.view === 'grid') {
      if (grid.key !== key) grid.reset(key, query);  // asks for the first page at once
      else grid.recheck();
    }
    // A person filter from the address names its person once the list is in,
    // asked for after the grid's first page (and, on the first screen, after
    // the summary: start() asks for it once route() returns).
    if (state.filters.person && state.view !== 'people') queueMicrotask(wantPeople);
    if (state.view === 'timeline') showTimeline();
    if (state.view === 'people' && (prev.view !== 'people' || !$('#people').dataset.state)) renderPeople();
    if (state.view === 'duplicates') {
      if (dups.key === null) dups.reset('duplicates', '');
      else dups.recheck();
    }
    if (state.photo !== viewerOpen) {
      if (state.photo) openViewer(state.photo);
      else hideViewer();
    }
  }

  // The first screen: the grid's first page is asked for at once and shown
  // as soon as it comes; the summary (counts, filters, timeline), asked for
  // alongside, fills in whenever it arrives.
  function start() {
    document.body.dataset.mode = source.mode;
    wireFilters();
    wireViewer();
    window.addEventListener('hashchange', route);
    route();
    source.summary().then((s) => { summary = s; showSummary(); }, showError).finally(summaryArrived);
    // The static gallery holds its people in memory: nothing to wait for.
    if (source.mode === 'static') wantPeople();
  }

  start();
})();
