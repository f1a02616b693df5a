#include "ui/web_page.h"

#include "core/json_writer.h"

namespace cincinnati::ui {
namespace {

constexpr std::string_view kHead = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Update graph</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:Helvetica,Arial,sans-serif;margin:0;color:#1d2733}
header{background:#1d3557;color:#fff;padding:8px 16px;display:flex;gap:12px;align-items:center;flex-wrap:wrap}
header h1{font-size:18px;margin:0 16px 0 0}
select,button,input{font-size:14px}
main{display:flex;height:calc(100vh - 52px)}
#graph{flex:1;min-width:0;overflow:auto;padding:8px;border-right:1px solid #ccd}
#graph svg{display:block;max-width:100%;height:auto}#graph.actual-size svg{max-width:none}
#graph:not(.show-blocked) g.blocked{display:none}
#from,#to{width:9em}
#side{width:380px;overflow:auto;padding:8px 12px;font-size:14px;overflow-wrap:anywhere}
#side td,#payload{word-break:break-all}
#legend svg{vertical-align:middle;margin-right:4px}#legend div{margin:2px 0}
#risks p{margin:4px 0}
#side h2{font-size:15px;margin:14px 0 6px}
.release{cursor:pointer}
.release.selected polygon,.release.selected path{fill:#9fd3ff}
.on-path path{stroke:#2b8a3e;stroke-width:4}
.on-path.release polygon,.on-path.release path{fill:#c3f0ca;stroke:#2b8a3e}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #e3e6ee;padding:3px;text-align:left}
.bar{background:#e3e6ee;height:8px;width:100px;display:inline-block}.bar i{display:block;height:8px;background:#2b8a3e}
.muted{color:#667}.error{color:#c23030}
#adoption-legend span{display:inline-block;margin-right:10px}#adoption-legend i{display:inline-block;width:10px;height:10px;margin-right:3px}
</style></head>
<body>
<header><h1>Update graph</h1>
<label>Channel <select id="channel"></select></label>
<label>Arch <select id="arch"></select></label>
<label><input type="checkbox" id="blocked"> blocked edges</label>
<button id="zoom" title="the graph fits the window's width; 1:1 draws it at its own size">1:1</button>
<span id="status" class="muted"></span>
</header>
<main><div id="graph"></div>
<div id="side">
<h2>Legend</h2><div id="legend">
<div data-kind="recommended"><svg width="36" height="8"><line x1="0" y1="4" x2="36" y2="4" stroke="#4a6fa5" stroke-width="2"/></svg>recommended update</div>
<div data-kind="conditional"><svg width="36" height="8"><line x1="0" y1="4" x2="36" y2="4" stroke="#d9822b" stroke-width="2" stroke-dasharray="6,3"/></svg>conditional update: offered when its risks do not apply (risk names on the edge)</div>
<div data-kind="brake"><svg width="36" height="8"><line x1="0" y1="4" x2="36" y2="4" stroke="#c2255c" stroke-width="3"/></svg>braked edge: a conditional update the service's brake holds back (failure reports; brake: on the edge)</div>
<div data-kind="blocked"><svg width="36" height="8"><line x1="0" y1="4" x2="36" y2="4" stroke="#c23030" stroke-width="3" stroke-dasharray="2,3"/></svg>blocked edge, never offered (shown with &ldquo;blocked edges&rdquo;)</div>
</div>
<h2>Risks</h2><div id="risks" class="muted">none</div>
<h2>Release</h2><div id="details" class="muted">Click a release.</div>
<h2>Path</h2>
<div><input id="from" list="releases" placeholder="from" autocomplete="off"> &rarr; <input id="to" list="releases" placeholder="to" autocomplete="off">
<datalist id="releases"></datalist>
<input id="accept" placeholder="accept risks (a,b or *)" size="18">
<button id="path-button">Path</button> <button id="explain-button">Why (not)?</button></div>
<div id="path-result"></div><div id="explain-result"></div>
<h2>Phased rollouts</h2><div id="rollouts" class="muted">none</div>
<h2>Adoption</h2><div id="adoption" class="muted">none</div>
</div></main>
<script>
)HTML";

constexpr std::string_view kScript = R"JS(
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
let view = null;
async function getJson(path) {
  const r = await fetch(PREFIX + path, {headers: {Accept: 'application/json'}});
  const body = await r.json();
  if (!r.ok) throw new Error(body.value || r.statusText);
  return body;
}
function query() {
  return 'channel=' + encodeURIComponent($('channel').value) + '&arch=' + encodeURIComponent($('arch').value);
}
function fill(select, values, keep) {
  const old = select.value;
  select.innerHTML = values.map((v) => '<option>' + esc(v) + '</option>').join('');
  if (keep && values.includes(old)) select.value = old;
}
// The newest stable channel (what most clusters follow) when the address names none.
function defaultChannel(channels) {
  const key = (c) => c.replace(/^[^0-9]*/, '').split(/[.-]/).map((p) => parseInt(p, 10) || 0);
  const newer = (a, b) => {
    const x = key(a), y = key(b);
    for (let i = 0; i < Math.max(x.length, y.length); ++i) {
      if ((x[i] || 0) !== (y[i] || 0)) return (x[i] || 0) > (y[i] || 0);
    }
    return false;
  };
  const stable = channels.filter((c) => c.startsWith('stable-'));
  return stable.length ? stable.reduce((best, c) => (newer(c, best) ? c : best)) : channels[0];
}
async function loadChannels() {
  const c = await getJson('/v1/ui/channels');
  fill($('channel'), c.channels, false);
  fill($('arch'), c.arches, false);
  if (c.channels.length) $('channel').value = defaultChannel(c.channels);
  if (c.arches.includes('amd64')) $('arch').value = 'amd64';
  const want = new URLSearchParams(location.hash.slice(1));
  if (want.get('channel') && c.channels.includes(want.get('channel'))) $('channel').value = want.get('channel');
  if (want.get('arch') && c.arches.includes(want.get('arch'))) $('arch').value = want.get('arch');
  await loadView();
}
async function loadView() {
  $('status').textContent = 'loading…';
  location.hash = query();
  try {
    view = await getJson('/v1/graph?' + query());
    const versions = view.nodes.map((n) => n.version);
    fillReleases(versions);
    // Laid out once with the blocked edges: the checkbox only shows or hides them.
    const r = await fetch(PREFIX + '/v1/ui/graph.svg?' + query() + '&blocked=1');
    $('graph').innerHTML = await r.text();
    fitSvg();
    for (const g of $('graph').querySelectorAll('g.release')) g.addEventListener('click', () => select(g.id.slice(8)));
    showBlocked();
    showRisks();
    $('path-result').innerHTML = $('explain-result').innerHTML = '';
    await loadRollouts();
    await loadAdoption();
  } catch (e) {
    $('status').innerHTML = '<span class="error">' + esc(e.message) + '</span>';
  }
}
// The from/to fields offer the view's releases at once and, when first used, every
// release of the graph for this arch (any of them can be asked about).
function fillReleases(versions) {
  for (const id of ['from', 'to']) {
    if (!versions.includes($(id).value)) $(id).value = id === 'from' ? versions[0] || '' : versions[versions.length - 1] || '';
  }
  if (versions.length > 1 && $('from').value === $('to').value) $('to').value = versions[versions.length - 1];
  if (knownFor !== $('arch').value) $('releases').innerHTML = versions.map((v) => '<option value="' + esc(v) + '">').join('');
}
let knownFor = null;
async function loadKnownReleases() {
  const arch = $('arch').value;
  if (knownFor === arch) return;
  knownFor = arch;
  const all = new Set(view ? view.nodes.map((n) => n.version) : []);
  for (const channel of [...$('channel').options].map((o) => o.value)) {
    try {
      const g = await getJson('/v1/graph?channel=' + encodeURIComponent(channel) + '&arch=' + encodeURIComponent(arch));
      for (const n of g.nodes) all.add(n.version);
    } catch (e) { /* a channel without this arch adds nothing */ }
  }
  if (knownFor !== arch) return;
  const sorted = [...all].sort((x, y) => x.localeCompare(y, undefined, {numeric: true}));
  $('releases').innerHTML = sorted.map((v) => '<option value="' + esc(v) + '">').join('');
  $('releases').dataset.complete = arch;
}
// Graphviz gives the picture's size in points: drawn at most that wide (1:1), and
// scaled down to the graph area's width unless "1:1" is on.
function fitSvg() {
  const svg = $('graph').querySelector('svg');
  if (!svg) return;
  const width = svg.getAttribute('width') || '';
  const px = parseFloat(width) * (width.endsWith('pt') ? 4 / 3 : 1);
  if (px > 0) svg.setAttribute('width', px.toFixed(0));
  svg.removeAttribute('height');
}
function showBlocked() {
  const on = $('blocked').checked;
  $('graph').classList.toggle('show-blocked', on);
  if (!view) return;
  const blocked = $('graph').querySelectorAll('g[id^="blocked:"]').length;
  $('status').textContent = view.nodes.length + ' releases, ' + view.edges.length + ' edges, ' +
      (view.conditionalEdges || []).reduce((n, c) => n + c.edges.length, 0) + ' conditional' +
      (on ? ', ' + blocked + ' blocked' : '');
}
function toggleZoom() {
  const actual = $('graph').classList.toggle('actual-size');
  $('zoom').textContent = actual ? 'fit' : '1:1';
}
// Each conditional group's risks, named, with their message and the edges they hold.
function showRisks() {
  const groups = view.conditionalEdges || [];
  $('risks').className = groups.length ? '' : 'muted';
  $('risks').innerHTML = groups.length ? groups.map((c) => '<p>' + c.risks.map((r) =>
      '<b class="risk-name">' + (r.url ? '<a href="' + esc(r.url) + '">' + esc(r.name) + '</a>' : esc(r.name)) + '</b>: ' +
      esc(r.message || '')).join('<br>') + '<br><span class="muted">' +
      c.edges.map((e) => esc(e.from + ' → ' + e.to)).join(', ') + '</span></p>').join('') : 'none';
}
function select(version) {
  for (const g of $('graph').querySelectorAll('g.release.selected')) g.classList.remove('selected');
  const g = document.getElementById('release:' + version);
  if (g) g.classList.add('selected');
  const node = view.nodes.find((n) => n.version === version);
  if (!node) return;
  const rows = Object.entries(node.metadata || {}).filter(([k, v]) => v !== '').map(([k, v]) =>
      '<tr><td>' + esc(k) + '</td><td>' + (k === 'url' ? '<a href="' + esc(v) + '">' + esc(v) + '</a>' : esc(v)) + '</td></tr>');
  const url = (node.metadata || {}).url;
  $('details').innerHTML = '<b id="selected-version">' + esc(version) + '</b> ' +
      (url ? '<a id="errata" href="' + esc(url) + '">errata</a>' : '') +
      '<div class="muted" id="payload">' + esc(node.payload) + '</div><table>' + rows.join('') + '</table>';
  $('from').value = version;
}
function clearPath() {
  for (const e of $('graph').querySelectorAll('.on-path')) e.classList.remove('on-path');
}
async function showPath() {
  clearPath();
  const q = query() + '&from=' + encodeURIComponent($('from').value) + '&to=' + encodeURIComponent($('to').value) +
      ($('accept').value ? '&accept=' + encodeURIComponent($('accept').value) : '');
  try {
    const a = await getJson('/v1/path?' + q);
    if (!a.paths.length) {
      $('path-result').innerHTML = '<p class="error" id="no-path">' + esc(a.message) + '</p>';
      return;
    }
    const p = a.paths[0];
    for (const v of p.releases) document.getElementById('release:' + v)?.classList.add('on-path');
    for (const e of p.edges) document.getElementById('edge:' + e.from + ':' + e.to)?.classList.add('on-path');
    $('path-result').innerHTML = '<p id="path-hops">' + p.hops + ' hop' + (p.hops === 1 ? '' : 's') + ': ' +
        p.releases.map(esc).join(' &rarr; ') + '</p>' +
        p.edges.filter((e) => e.risks.length).map((e) => '<p>' + esc(e.from + ' → ' + e.to) + ' accepts ' + esc(e.risks.join(', ')) + '</p>').join('');
  } catch (e) {
    $('path-result').innerHTML = '<p class="error">' + esc(e.message) + '</p>';
  }
}
async function explain() {
  const q = query() + '&version=' + encodeURIComponent($('from').value) + '&to=' + encodeURIComponent($('to').value);
  try {
    const a = await getJson('/v1/explain?' + q);
    if (a.stop || !a.edges.length) {
      $('explain-result').innerHTML = '<p class="error" id="explain-stop">' +
          esc(a.message || 'no newer release of ' + a.version + ' in this channel') + '</p>';
      return;
    }
    $('explain-result').innerHTML = a.edges.map((e) => '<p><b>' + esc(e.from + ' → ' + e.to) + ': ' + esc(e.verdict) +
        '</b></p><ul id="reasons">' + e.reasons.map((r) => '<li data-kind="' + esc(r.kind) + '">' + esc(r.message) + '</li>').join('') + '</ul>').join('');
  } catch (e) {
    $('explain-result').innerHTML = '<p class="error">' + esc(e.message) + '</p>';
  }
}
async function loadRollouts() {
  const r = await getJson('/v1/ui/rollouts?' + query());
  if (!r.rollouts.length) {
    $('rollouts').innerHTML = '<span class="muted">none</span>';
    return;
  }
  $('rollouts').innerHTML = '<table><tr><th>edge</th><th>share now</th><th>complete</th></tr>' + r.rollouts.map((w) =>
      '<tr><td>' + esc(w.from + ' → ' + w.to) + '</td><td><span class="bar"><i style="width:' + (w.share * 100).toFixed(0) +
      'px"></i></span> ' + (w.share * 100).toFixed(1) + '%</td><td>' + esc(w.completeAt) + '</td></tr>').join('') + '</table>';
}
// Clusters seen polling at each of this channel's versions over time (reports on), the
// other versions summed; a dashed line where a brake was put on.
const COLORS = ['#4a6fa5', '#2b8a3e', '#d9822b', '#7048e8', '#0b7285', '#e64980', '#5c940d', '#868e96'];
async function loadAdoption() {
  const a = await getJson('/v1/ui/adoption');
  const box = $('adoption');
  if (!a.samples.length) {
    box.className = 'muted';
    box.textContent = a.off ? 'no clusters seen: ' + a.off : 'no cluster has polled with an id yet';
    return;
  }
  const inView = new Set(view.nodes.map((n) => n.version.replace(/[+].*/, '')));
  const series = new Map();
  a.samples.forEach((s, i) => {
    for (const [v, n] of Object.entries(s.clusters)) {
      const name = inView.has(v) ? v : 'other';
      if (!series.has(name)) series.set(name, new Array(a.samples.length).fill(0));
      series.get(name)[i] += n;
    }
  });
  const names = [...series.keys()].sort((x, y) => (x === 'other') - (y === 'other') ||
      x.localeCompare(y, undefined, {numeric: true}));
  const times = a.samples.map((s) => Date.parse(s.time));
  const t0 = times[0], t1 = Math.max(times[times.length - 1], t0 + 1);
  const top = Math.max(1, ...[...series.values()].flat());
  const W = 350, H = 160, L = 36, B = 18;
  const x = (t) => L + (t - t0) / (t1 - t0) * (W - L - 4), y = (n) => H - B - n / top * (H - B - 6);
  let svg = '<svg id="adoption-chart" width="' + W + '" height="' + H + '" role="img">' +
      '<line x1="' + L + '" y1="' + (H - B) + '" x2="' + W + '" y2="' + (H - B) + '" stroke="#99a"/>' +
      '<line x1="' + L + '" y1="4" x2="' + L + '" y2="' + (H - B) + '" stroke="#99a"/>' +
      '<text x="' + (L - 4) + '" y="12" font-size="10" text-anchor="end">' + top + '</text>' +
      '<text x="' + (L - 4) + '" y="' + (H - B) + '" font-size="10" text-anchor="end">0</text>' +
      '<text x="' + L + '" y="' + (H - 4) + '" font-size="10">' + esc(a.samples[0].time) + '</text>' +
      '<text x="' + W + '" y="' + (H - 4) + '" font-size="10" text-anchor="end">' + esc(a.samples[a.samples.length - 1].time) + '</text>';
  for (const c of view.conditionalEdges || []) {
    for (const r of c.risks) {
      const at = /^AutomaticallyBlocked_/.test(r.name) && /Automatically blocked at (\S+):/.exec(r.message || '');
      const t = at ? Date.parse(at[1]) : NaN;
      if (t >= t0 && t <= t1) {
        svg += '<line class="brake" x1="' + x(t) + '" y1="4" x2="' + x(t) + '" y2="' + (H - B) +
            '" stroke="#c23030" stroke-dasharray="4,3"><title>' + esc(r.name) + '</title></line>';
      }
    }
  }
  names.forEach((name, k) => {
    const points = series.get(name).map((n, i) => x(times[i]).toFixed(1) + ',' + y(n).toFixed(1)).join(' ');
    svg += '<polyline data-version="' + esc(name) + '" fill="none" stroke-width="2" stroke="' + COLORS[k % COLORS.length] +
        '" points="' + points + '"/>';
  });
  box.className = '';
  box.innerHTML = svg + '</svg><div id="adoption-legend">' + names.map((name, k) => '<span data-version="' + esc(name) +
      '"><i style="background:' + COLORS[k % COLORS.length] + '"></i>' + esc(name) + ': ' +
      series.get(name)[a.samples.length - 1] + '</span>').join('') + '</div><div class="muted">clusters by the version they last ' +
      'polled at, a sample every ' + Math.round(a.periodSeconds / 60) + ' min</div>';
}
setInterval(() => { if (view) loadAdoption().catch(() => {}); }, 30000);
$('channel').addEventListener('change', loadView);
$('arch').addEventListener('change', loadView);
$('blocked').addEventListener('change', showBlocked);
$('zoom').addEventListener('click', toggleZoom);
for (const id of ['from', 'to']) $(id).addEventListener('focus', () => loadKnownReleases().catch(() => {}));
$('path-button').addEventListener('click', showPath);
$('explain-button').addEventListener('click', explain);
loadChannels().catch((e) => { $('status').innerHTML = '<span class="error">' + esc(e.message) + '</span>'; });
</script></body></html>
)JS";

}  // namespace

std::string GraphPage(std::string_view path_prefix) {
  std::string page(kHead);
  std::string prefix = JsonString(path_prefix);
  for (size_t at = prefix.find('<'); at != std::string::npos; at = prefix.find('<', at)) prefix.replace(at, 1, "\\u003c");
  page += "const PREFIX = " + prefix + ";\n";
  page += kScript;
  return page;
}

}  // namespace cincinnati::ui
