// The live view of an elasticdl-ts job: one status snapshot per second over server-sent events
// (polling /api/status when they are unavailable), applied to a DOM built once, so nothing flickers.

// Timer names come with the data, in the workers' order (get_task, get_batch, ... report_gradient).
let TIMERS = [];
const TIMER_COLORS = ['#8e9aaf', '#5b8def', '#22a39f', '#e0a526', '#d9534f', '#9b6bd3', '#5fb35f', '#c9748f'];
const color = (i) => TIMER_COLORS[i % TIMER_COLORS.length];
const $ = (id) => document.getElementById(id);
const fmt = new Intl.NumberFormat('en-US');

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '–';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return h > 0
    ? `${h}h ${String(m).padStart(2, '0')}m`
    : m > 0
      ? `${m}m ${String(r).padStart(2, '0')}s`
      : `${r}s`;
}

function ago(iso) {
  if (!iso) return 'never';
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  return s < 1 ? 'just now' : `${s.toFixed(s < 10 ? 1 : 0)} s ago`;
}

function lossText(v) {
  return v === null || v === undefined ? '–' : Number(v).toPrecision(4);
}

function chart(el, label, color, x) {
  const opts = {
    width: el.clientWidth || 400,
    height: el.clientHeight || 200,
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: false } },
    axes: [
      {
        label: x,
        labelSize: 16,
        size: 34,
        stroke: '#6b7785',
        grid: { stroke: '#eef1f4' },
        ticks: { stroke: '#e3e7ec' },
      },
      { size: 56, stroke: '#6b7785', grid: { stroke: '#eef1f4' }, ticks: { stroke: '#e3e7ec' } },
    ],
    series: [{}, { label, stroke: color, width: 2, fill: `${color}1f`, points: { show: false } }],
  };
  const plot = new uPlot(opts, [[], []], el);
  new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height: el.clientHeight })).observe(el);
  return plot;
}

const throughputChart = chart($('chart-throughput'), 'records/s', '#2f6fdf', 'seconds');
const lossChart = chart($('chart-loss'), 'loss', '#d64545', 'seconds');
// For scripts driving the page (the end-to-end test reads what the charts hold).
window.__edlCharts = { throughput: throughputChart, loss: lossChart };

/** Keeps one <tr> per key in `tbody`, in order, updating cells in place. */
function syncRows(tbody, rows, key, cells) {
  const existing = new Map([...tbody.children].map((tr) => [tr.dataset.key, tr]));
  rows.forEach((row, index) => {
    const k = String(key(row));
    let tr = existing.get(k);
    const values = cells(row);
    if (tr === undefined) {
      tr = document.createElement('tr');
      tr.dataset.key = k;
      for (const cell of values) {
        const td = document.createElement('td');
        if (cell.n) td.className = 'n';
        tr.appendChild(td);
      }
    }
    existing.delete(k);
    values.forEach((cell, i) => {
      const td = tr.children[i];
      setText(td, cell.text);
      const cls = `${cell.n ? 'n ' : ''}${cell.cls ?? ''}`.trim();
      if (td.className !== cls) td.className = cls;
    });
    if (tbody.children[index] !== tr) tbody.insertBefore(tr, tbody.children[index] ?? null);
  });
  for (const tr of existing.values()) tr.remove();
}

function renderRecords(kind, count) {
  const card = document.querySelector(`.card[data-kind="${kind}"]`);
  card.classList.toggle('empty', count.total === 0);
  setText(
    $(`rec-${kind}`),
    count.total === 0 ? '–' : `${fmt.format(count.done)} / ${fmt.format(count.total)}`,
  );
  $(`bar-${kind}`).style.width = `${count.total > 0 ? Math.min(100, (100 * count.done) / count.total) : 0}%`;
}

function renderTiming(workers) {
  const box = $('timing');
  const names = [...new Set(workers.flatMap((w) => Object.keys(w.timers)))];
  if (names.join() !== TIMERS.join()) {
    // New activity names (the first heartbeat with timers): rebuild the legend and the bars.
    TIMERS = names;
    $('legend').innerHTML = TIMERS.map(
      (t, i) => `<span><i style="background:${color(i)}"></i>${t}</span>`,
    ).join('');
    box.replaceChildren();
  }
  const max = Math.max(1e-9, ...workers.map((w) => TIMERS.reduce((s, t) => s + (w.timers[t] ?? 0), 0)));
  const existing = new Map([...box.children].map((row) => [row.dataset.key, row]));
  workers.forEach((w, index) => {
    let row = existing.get(w.id);
    if (row === undefined) {
      row = document.createElement('div');
      row.className = 'timing-row';
      row.dataset.key = w.id;
      row.innerHTML = `<span></span><div class="stack">${TIMERS.map((_t, i) => `<div style="background:${color(i)}"></div>`).join('')}</div><span class="n"></span>`;
    }
    existing.delete(w.id);
    const total = TIMERS.reduce((s, t) => s + (w.timers[t] ?? 0), 0);
    setText(row.children[0], w.id);
    [...row.children[1].children].forEach((seg, i) => {
      const seconds = w.timers[TIMERS[i]] ?? 0;
      seg.style.width = `${(100 * seconds) / max}%`;
      seg.title = `${TIMERS[i]}: ${seconds.toFixed(2)} s`;
    });
    setText(row.children[2], `${total.toFixed(1)} s`);
    if (box.children[index] !== row) box.insertBefore(row, box.children[index] ?? null);
  });
  for (const row of existing.values()) row.remove();
}

// A long job would grow the table by a row per epoch and evaluation round: it shows the newest few,
// folds the older ones into one row, and always ends with the whole job's totals.
const TASK_ROWS_SHOWN = 4;
const TASK_COUNTS = ['todo', 'doing', 'done', 'failed', 'total'];

function sumTaskRows(rows, label, key) {
  const row = { label, key };
  for (const count of TASK_COUNTS) row[count] = rows.reduce((n, t) => n + t[count], 0);
  return row;
}

function visibleTaskRows(tasks) {
  if (tasks.length <= 1) return tasks;
  const older = tasks.slice(0, Math.max(0, tasks.length - TASK_ROWS_SHOWN));
  const newest = tasks.slice(older.length);
  const folded =
    older.length === 0
      ? []
      : [sumTaskRows(older, `${older.length} earlier${older.length === 1 ? '' : ' rounds'}`, 'earlier')];
  return [...folded, ...newest, sumTaskRows(tasks, 'all', 'all')];
}

function renderEvaluations(evaluations) {
  const table = $('evaluations');
  $('no-eval').hidden = evaluations.length > 0;
  table.hidden = evaluations.length === 0;
  const names = [...new Set(evaluations.flatMap((e) => Object.keys(e.metrics)))].sort();
  const head = `<tr><th>round</th><th class="n">model</th><th class="n">records</th>${names.map((n) => `<th class="n">${n}</th>`).join('')}</tr>`;
  if (table.tHead.dataset.head !== head) {
    table.tHead.innerHTML = head;
    table.tHead.dataset.head = head;
  }
  syncRows(
    table.tBodies[0],
    evaluations,
    (e) => e.round,
    (e) => [
      { text: String(e.round) },
      { text: `v${e.modelVersion}`, n: true },
      { text: fmt.format(e.records), n: true },
      ...names.map((n) => ({ text: e.metrics[n] === undefined ? '–' : e.metrics[n].toFixed(4), n: true })),
    ],
  );
}

function renderEvents(events) {
  const list = $('events');
  const key =
    events.length > 0
      ? `${events.length}:${events[events.length - 1].time}:${events[events.length - 1].message}`
      : '';
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
  list.replaceChildren(
    ...events.map((e) => {
      const li = document.createElement('li');
      li.className = `t-${e.type}`;
      const time = document.createElement('time');
      time.textContent = e.time.slice(11, 19);
      const text = document.createElement('span');
      text.textContent = e.message;
      li.append(time, text);
      return li;
    }),
  );
  if (atBottom) list.scrollTop = list.scrollHeight;
}

const bytesText = (n) =>
  n >= 2 ** 30
    ? `${(n / 2 ** 30).toFixed(1)} GiB`
    : n >= 2 ** 20
      ? `${(n / 2 ** 20).toFixed(1)} MiB`
      : `${fmt.format(n)} B`;

// One line per URL scheme the workers read (s3, https): throttling shows as retries while the job runs.
function renderStorage(storage) {
  const card = $('storage-card');
  card.hidden = !storage || storage.length === 0;
  if (card.hidden) return;
  const lines = storage.map((t) => {
    const retries = Object.values(t.retries).reduce((a, b) => a + b, 0);
    const latency = `${(t.meanLatencySeconds * 1000).toFixed(0)} ms`;
    const failed = t.failures > 0 ? `, ${fmt.format(t.failures)} failed` : '';
    return `${t.scheme}: ${fmt.format(t.requests)} / ${bytesText(t.bytes)} / ${fmt.format(retries)} (${fmt.format(t.retries.throttled ?? 0)}) / ${latency}${failed}`;
  });
  setText($('storage'), lines.join('\n'));
}

// One line per 'auto' stage of each worker's dataset: what its tuner chose and what it measured.
function renderDataPipelines(rows) {
  const card = $('data-pipeline-card');
  card.hidden = !rows || rows.length === 0;
  if (card.hidden) return;
  const rate = (n) => (n > 0 ? fmt.format(Math.round(n)) : '–');
  const lines = rows.flatMap((r) => [
    `${r.worker}: ${bytesText(r.modelledBytes)} of ${bytesText(r.ramBudgetBytes)}, ${r.cpuBudget} threads`,
    ...r.stages.map(
      (t) =>
        `  ${t.label}: ${t.parallelism} × ${t.bufferSize} · ${rate(t.inputPerSecond)} / ${rate(t.workPerSecond)} / ${rate(t.consumerPerSecond)}`,
    ),
  ]);
  setText($('data-pipeline'), lines.join('\n'));
}

function render(s) {
  const job = s.job;
  setText($('job-id'), job.id);
  setText($('job-type'), job.type);
  const state = $('state');
  setText(state, job.state);
  state.className = `pill ${job.state}`;
  if (job.error) state.title = job.error;
  setText($('phase'), job.phase);
  setText(
    $('epoch'),
    job.numEpochs > 0 && job.type.startsWith('training')
      ? `${Math.min(job.epoch + 1, job.numEpochs)} / ${job.numEpochs}`
      : '–',
  );
  setText($('version'), `v${job.modelVersion}`);
  setText($('elapsed'), duration(job.elapsedSeconds));
  setText($('eta'), job.state === 'running' ? duration(job.etaSeconds) : 'done');
  for (const kind of ['training', 'evaluation', 'prediction']) renderRecords(kind, job.records[kind]);
  setText(
    $('gradients'),
    `${fmt.format(job.gradients.applied)} / ${fmt.format(job.gradients.stale)} / ${fmt.format(job.gradients.rejected)}`,
  );
  setText($('relaunches'), String(job.workerRelaunches));
  renderStorage(s.storage);
  renderDataPipelines(s.dataPipelines);

  throughputChart.setData([s.throughput.map((p) => p[0]), s.throughput.map((p) => p[1])]);
  lossChart.setData([s.loss.map((p) => p[0]), s.loss.map((p) => p[2])]);

  syncRows(
    $('workers').tBodies[0],
    s.workers,
    (w) => w.id,
    (w) => [
      { text: w.id },
      { text: w.state, cls: `state-${w.state}` },
      { text: w.backend || '–' },
      { text: fmt.format(w.steps), n: true },
      { text: fmt.format(w.records), n: true },
      { text: w.recordsPerSecond.toFixed(0), n: true },
      { text: lossText(w.lastLoss), n: true },
      { text: ago(w.lastHeartbeat) },
      { text: String(w.restarts), n: true },
    ],
  );
  renderTiming(s.workers);
  syncRows(
    $('tasks').tBodies[0],
    visibleTaskRows(s.tasks),
    (t) => t.key ?? t.label,
    (t) => [
      { text: t.label },
      { text: fmt.format(t.todo), n: true },
      { text: fmt.format(t.doing), n: true },
      { text: fmt.format(t.done), n: true },
      { text: fmt.format(t.failed), n: true, cls: t.failed > 0 ? 'state-lost' : '' },
      { text: fmt.format(t.total), n: true },
    ],
  );
  renderEvaluations(s.evaluations);
  renderEvents(s.events);
  document.title = `${job.state === 'running' ? `${Math.round((100 * job.recordsDone) / Math.max(1, job.recordsTotal))}%` : job.state} · job ${job.id}`;
  window.__edlLastStatus = s;
}

let polling;
// Three missed pushes (the master pushes every second) before the stream counts as down.
const STREAM_DOWN_MS = 3000;
function poll() {
  fetch('/api/status', { credentials: 'same-origin' })
    .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
    .then((s) => {
      setText($('connection'), '');
      render(s);
    })
    .catch(() => setText($('connection'), 'master unreachable: showing the last state'));
}

function connect() {
  if (typeof EventSource !== 'function') {
    polling = setInterval(poll, 2000);
    poll();
    return;
  }
  const source = new EventSource('/api/events');
  // The browser fires `error` for a blip it recovers from on its own at once (and a stream it
  // reopens is healthy again): "reconnecting" shows only while no status has arrived for a while.
  let lastMessageAt = Date.now();
  let downCheck;
  const clearDown = () => {
    clearTimeout(downCheck);
    downCheck = undefined;
    setText($('connection'), '');
  };
  source.onopen = clearDown;
  source.onmessage = (message) => {
    lastMessageAt = Date.now();
    clearDown();
    render(JSON.parse(message.data));
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) {
      if (polling === undefined) polling = setInterval(poll, 2000);
      return;
    }
    if (downCheck !== undefined) return;
    downCheck = setTimeout(() => {
      downCheck = undefined;
      if (source.readyState !== EventSource.OPEN || Date.now() - lastMessageAt > STREAM_DOWN_MS) {
        setText($('connection'), 'reconnecting…');
      }
    }, STREAM_DOWN_MS);
  };
}

connect();
