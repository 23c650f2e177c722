// csi-orchestrator status page: plain JS, no dependencies. Reads claim-service's REST (/v1/volumes, /v1/status/*)
// and follows its server-sent events (/v1/status/events); every change on the feed refreshes what it shows.
// Authentication: the token typed in the form is kept in sessionStorage and in the cookie csi_token; REST calls send
// it as "Authorization: Bearer <token>", EventSource (which cannot set headers) sends the cookie. Or a one-time login
// link (./csi status-page): /status/#login=<code>. The code leaves the address bar before any request and is traded
// once (POST /v1/status/login) for the cookie csi_token, HttpOnly: this script never holds that token.
(function () {
  'use strict';
  var TOKEN_KEY = 'csi_token';
  var FEED_MAX = 200;
  var base = location.pathname.replace(/\/status\/.*$/, '');
  var selected = null;
  var refreshTimer = null;
  var source = null;
  var lastSeq = 0;
  // pluginId -> the newest status seen, from REST or the feed (a REST answer may be older than the feed's).
  var plugins = {};

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  function setToken(value) {
    if (value) {
      sessionStorage.setItem(TOKEN_KEY, value);
      document.cookie = TOKEN_KEY + '=' + encodeURIComponent(value) + '; path=/; SameSite=Strict';
    } else {
      sessionStorage.removeItem(TOKEN_KEY);
      document.cookie = TOKEN_KEY + '=; path=/; max-age=0; SameSite=Strict';
    }
  }

  function api(path) {
    var headers = { 'Accept': 'application/json' };
    if (token()) { headers['Authorization'] = 'Bearer ' + token(); }
    return fetch(base + path, { headers: headers, credentials: 'same-origin' }).then(function (r) {
      if (r.status === 401 || r.status === 403) { authHelp(true); throw new Error('not authorized'); }
      if (!r.ok) { throw new Error(path + ': HTTP ' + r.status); }
      return r.json();
    });
  }

  // Where to find a token: shown while the data answers 401/403.
  function authHelp(show) { document.getElementById('auth-help').hidden = !show; }

  // The login code of /status/#login=<code>, taken out of the address (the rest of the hash, e.g. volume=, stays).
  function takeLoginCode() {
    var parts = location.hash.replace(/^#/, '').split('&');
    var code = null;
    var rest = parts.filter(function (p) {
      if (p.indexOf('login=') === 0) { code = decodeURIComponent(p.substring(6)); return false; }
      return p !== '';
    });
    if (code !== null) {
      history.replaceState(null, '', location.pathname + location.search + (rest.length ? '#' + rest.join('&') : ''));
    }
    return code;
  }

  function login(code) {
    setToken(''); // a typed token would be sent instead of the cookie the code brings
    return fetch(base + '/v1/status/login', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'code=' + encodeURIComponent(code)
    }).then(function (r) {
      if (!r.ok) { throw new Error('this login link was used already or has expired: run ./csi status-page for a new one'); }
    });
  }

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }

  function row(cells, attrs) {
    var tr = document.createElement('tr');
    Object.keys(attrs || {}).forEach(function (k) { tr.setAttribute(k, attrs[k]); });
    cells.forEach(function (c) {
      var td = el('td', c.text, c.cls);
      if (c.title) { td.title = c.title; }
      tr.appendChild(td);
    });
    return tr;
  }

  function fill(tbody, rows) {
    while (tbody.firstChild) { tbody.removeChild(tbody.firstChild); }
    rows.forEach(function (r) { tbody.appendChild(r); });
  }

  function when(iso) {
    if (!iso) { return ''; }
    var d = new Date(iso);
    var ago = Math.round((Date.now() - d.getTime()) / 1000);
    var text = d.toLocaleTimeString();
    return ago >= 0 && ago < 3600 ? text + ' (' + ago + ' s ago)' : d.toLocaleString();
  }

  function renderVolumes(volumes, conditions) {
    var abnormal = {};
    conditions.forEach(function (c) {
      if (c.condition === 'abnormal') { (abnormal[c.volume] = abnormal[c.volume] || []).push(c.nodeId + ': ' + (c.message || 'abnormal')); }
    });
    var rows = volumes.map(function (v) {
      var key = v.namespace + '/' + v.id;
      var bad = abnormal[key];
      var tr = row([
        { text: key }, { text: v.pluginId }, { text: v.accessMode },
        { text: v.currentReaders }, { text: v.currentWriters },
        { text: v.health + (v.deleting ? ' (deleting)' : ''), cls: v.schedulable ? 'healthy' : 'unhealthy' },
        { text: bad ? 'abnormal' : 'normal', cls: bad ? 'abnormal' : 'normal', title: bad ? bad.join('\n') : '' }
      ], { 'data-volume': key });
      if (key === selected) { tr.classList.add('selected'); }
      tr.addEventListener('click', function () { location.hash = 'volume=' + key; });
      return tr;
    });
    fill(document.querySelector('#volumes tbody'), rows);
    document.getElementById('volumes-empty').hidden = volumes.length > 0;
  }

  // Bytes as the CLI shows them: B, KiB, MiB, GiB, TiB; '?' when the plugin did not report the figure.
  function bytes(n) {
    if (n == null) { return '?'; }
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
  }

  // A past claim's phase "freed" is what claim-status calls released.
  function claimState(c) { return c.state === 'freed' ? 'released' : c.state; }

  function claimRow(c, past) {
    var state = claimState(c);
    return row([
      { text: c.allocationId }, { text: c.nodeId }, { text: c.mode },
      { text: state, cls: state },
      { text: when(past ? c.endedAt : c.createdAt) },
      { text: c.lastError || '', cls: 'wrap' }
    ], { 'data-alloc': c.allocationId, 'data-state': state });
  }

  function renderVolume(v) {
    var section = document.getElementById('volume-section');
    if (!v) { section.hidden = true; return; }
    section.hidden = false;
    document.getElementById('volume-name').textContent = v.namespace + '/' + v.id;
    var cond = (v.conditions || []).map(function (c) { return c.nodeId + ' ' + c.condition; }).join(', ');
    // issue 34: the usage each claiming node's worker last reported (NodeGetVolumeStats)
    var used = (v.usage || []).map(function (u) {
      var text = u.nodeId + ' ' + bytes(u.usedBytes) + ' of ' + bytes(u.capacityBytes) + ' used';
      return u.inodes != null ? text + ', ' + u.inodesUsed + ' of ' + u.inodes + ' inodes' : text;
    }).join(', ');
    document.getElementById('volume-summary').textContent = [v.pluginId, v.accessMode, v.attachmentMode,
      v.health, cond ? 'condition ' + cond : '', used ? 'usage ' + used : ''].filter(Boolean).join(' · ');
    fill(document.querySelector('#claims tbody'), (v.claims || []).map(function (c) { return claimRow(c, false); }));
    fill(document.querySelector('#past-claims tbody'), (v.pastClaims || []).slice().reverse()
      .map(function (c) { return claimRow(c, true); }));
  }

  function health(h) { return h ? 'healthy' : 'unhealthy'; }

  function newer(a, b) { return !a || (b && Date.parse(b.updatedAt || 0) >= Date.parse(a.updatedAt || 0)); }

  function mergePlugins(list) {
    var seen = {};
    list.forEach(function (p) {
      seen[p.pluginId] = true;
      if (newer(plugins[p.pluginId], p)) { plugins[p.pluginId] = p; }
    });
    Object.keys(plugins).forEach(function (id) { if (!seen[id] && !plugins[id].fromFeed) { delete plugins[id]; } });
  }

  function renderPlugins() {
    var rows = [];
    Object.keys(plugins).sort().map(function (id) { return plugins[id]; }).forEach(function (p) {
      var ok = p.nodesHealthy === p.nodesExpected && (p.controllersHealthy || 0) === (p.controllersExpected || 0);
      rows.push(row([
        { text: p.pluginId }, { text: (p.controllersHealthy || 0) + ' / ' + (p.controllersExpected || 0) },
        { text: p.nodesHealthy + ' / ' + p.nodesExpected }, { text: ok ? 'healthy' : 'degraded', cls: health(ok) },
        { text: when(p.updatedAt) }
      ], { 'data-plugin': p.pluginId }));
      var controllers = {};
      (p.controllers || []).forEach(function (c) { controllers[c.nodeId] = c; });
      (p.nodes || []).forEach(function (n) {
        var c = controllers[n.nodeId];
        var tr = row([
          { text: n.nodeId }, { text: c ? health(c.healthy) : '-', cls: c ? health(c.healthy) : '' },
          { text: health(n.healthy), cls: health(n.healthy) },
          { text: n.healthDescription || '', cls: 'wrap' }, { text: when(n.lastSeen) }
        ], { 'data-instance': p.pluginId + '/' + n.nodeId, 'data-health': health(n.healthy) });
        tr.classList.add('instance');
        rows.push(tr);
      });
    });
    fill(document.querySelector('#plugins tbody'), rows);
  }

  function segments(m) {
    return Object.keys(m || {}).sort().map(function (k) { return k + '=' + m[k]; }).join(', ');
  }

  // issue 34: the placement topic's entries as claim-service wrote them (what a scheduler reads)
  function renderPlacement(list) {
    fill(document.querySelector('#placement tbody'), (list || []).map(function (p) {
      if (p.kind === 'capacity') {
        return row([{ text: p.pluginId + ' / ' + segments(p.segment) }, { text: segments(p.segment) }, { text: '-' },
          { text: p.availableCapacity + ' bytes' }, { text: '' }], { 'data-placement': p.pluginId + '/' + segments(p.segment) });
      }
      return row([{ text: p.pluginId + ' / ' + p.nodeId }, { text: segments(p.accessibleTopology), cls: 'wrap' },
        { text: p.volumesHeld + ' / ' + (p.maxVolumes ? p.maxVolumes : 'no limit') }, { text: '-' },
        { text: health(p.healthy), cls: health(p.healthy) }], { 'data-placement': p.pluginId + '/' + p.nodeId });
    }));
  }

  function feedLine(e) {
    var li = el('li');
    li.setAttribute('data-topic', e.topic);
    li.appendChild(el('time', e.at ? new Date(e.at).toLocaleTimeString() : ''));
    li.appendChild(el('span', e.kind, 'kind ' + e.kind));
    var what = [e.volume, e.allocation ? 'alloc ' + e.allocation : null, e.node ? 'node ' + e.node : null,
      e.plugin ? 'plugin ' + e.plugin : null, e.text].filter(Boolean).join(' · ');
    li.appendChild(el('span', what));
    return li;
  }

  function addToFeed(e) {
    if (e.seq && e.seq <= lastSeq) { return; }
    lastSeq = Math.max(lastSeq, e.seq || 0);
    var feed = document.getElementById('feed');
    feed.insertBefore(feedLine(e), feed.firstChild);
    while (feed.children.length > FEED_MAX) { feed.removeChild(feed.lastChild); }
  }

  function refresh() {
    refreshTimer = null;
    var loads = [api('/v1/volumes'), api('/v1/status/conditions'), api('/v1/status/plugins'),
      selected ? api('/v1/volumes/' + selected).catch(function () { return null; }) : Promise.resolve(null),
      api('/v1/status/placement').catch(function () { return []; })];
    return Promise.all(loads).then(function (r) {
      renderVolumes(r[0], r[1]);
      mergePlugins(r[2]);
      renderPlugins();
      renderVolume(r[3]);
      renderPlacement(r[4]);
      authHelp(false);
      document.body.setAttribute('data-refreshed', String(Date.now()));
    }).catch(function (err) { status(err.message, false); });
  }

  function soon() {
    if (!refreshTimer) { refreshTimer = setTimeout(refresh, 250); }
  }

  function status(text, live) {
    var badge = document.getElementById('live');
    badge.textContent = text;
    badge.className = live ? 'badge' : 'badge off';
  }

  function connect() {
    if (source) { source.close(); }
    source = new EventSource(base + '/v1/status/events', { withCredentials: true });
    source.onopen = function () { status('live', true); soon(); };
    source.onerror = function () { status('reconnecting', false); };
    source.onmessage = function (m) {
      try {
        var e = JSON.parse(m.data);
        addToFeed(e);
        if (e.topic === 'plugin-status' && e.plugin) {
          if (e.status && newer(plugins[e.plugin], e.status)) {
            e.status.fromFeed = true;
            plugins[e.plugin] = e.status;
          } else if (!e.status) {
            delete plugins[e.plugin];
          }
          renderPlugins();
        }
      } catch (ignored) { /* not a feed entry */ }
      soon();
    };
  }

  function select() {
    var m = /volume=([^&]+)/.exec(location.hash);
    selected = m ? decodeURIComponent(m[1]) : null;
    soon();
  }

  document.getElementById('token-form').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var input = document.getElementById('token');
    setToken(input.value.trim());
    input.value = '';
    connect();
    refresh();
  });
  window.addEventListener('hashchange', select);
  var code = takeLoginCode();
  select();
  (code === null ? Promise.resolve() : login(code)).catch(function (err) {
    status(err.message, false);
    authHelp(true);
  }).then(function () {
    api('/v1/status/feed').then(function (entries) { entries.forEach(addToFeed); }).catch(function () { /* shown by refresh */ });
    connect();
    refresh();
  });
  // Heartbeat ages and anything a dropped stream missed: a slow refresh besides the live one.
  setInterval(soon, 15000);
})();
