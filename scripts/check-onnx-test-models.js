#!/usr/bin/env node
// Checks the ONNX test models under test/models/onnx/optimum*/ against the Transformers goldens:
// graphs with past (optimum/), Optimum's merged decoders (optimum-merged/: use_cache_branch is
// fed true when there is a past) and graphs without a cache (optimum-nocache/: each "cached"
// step runs the whole sequence so far and reads its last rows).
//
// A dev tool (CI has no Node onnxruntime): it needs onnxruntime-node, found through
// --ort, $ORT_NODE, or /tmp/ortnode/node_modules/onnxruntime-node.
//
//   node scripts/check-onnx-test-models.js                    # every model.onnx / model_fp16.onnx
//   node scripts/check-onnx-test-models.js --opt all          # with ORT graph optimizations
//   node scripts/check-onnx-test-models.js --onnx-dir /tmp/onnx_float32   # files written with --out
//   node scripts/check-onnx-test-models.js --update-readme    # also write the table into README.md
//
// For each graph (the goldens are test/models/<m>/golden.json and golden_logits.safetensors):
//   full    the 24 input_ids in one pass with an empty past: logits vs the golden [24, vocab]
//   cached  16 ids, then the other 8 one at a time with present -> past (mask all ones,
//           position_ids = position): each step's logits vs the golden rows
//   greedy  the 24 ids then 32 greedy steps with the cache vs golden.json's greedy_ids
//   pad     batch of 2: row 0 the 24 ids, row 1 16 other ids left-padded with 8 masked
//           pad tokens (position_ids as transformers builds them: cumsum(mask)-1, 1 on pads),
//           then one cached decode step for both rows; row 1's real-token logits vs
//           running it alone, and a control run with the pads unmasked (must differ)
// Limits: relative L2 error (||got-want|| / ||want||) <= 1e-2 for float16 graphs, 1e-4 for
// float32; argmax equal on every row whose golden top-2 margin exceeds 1e-2; float32 greedy
// ids identical (float16: the first mismatch is reported, not failed).
'use strict';

const fs = require('fs');
const path = require('path');

function parseArgs(argv) {
  const root = path.resolve(__dirname, '..');
  const a = {
    modelsDir: path.join(root, 'test', 'models'),
    onnxDir: null,
    ort: process.env.ORT_NODE || '/tmp/ortnode/node_modules/onnxruntime-node',
    opt: 'disabled',
    updateReadme: false,
  };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--models-dir') a.modelsDir = argv[++i];
    else if (k === '--onnx-dir') a.onnxDir = argv[++i];
    else if (k === '--ort') a.ort = argv[++i];
    else if (k === '--opt') a.opt = argv[++i];
    else if (k === '--update-readme') a.updateReadme = true;
    else { console.error(`unknown argument ${k}`); process.exit(2); }
  }
  if (!a.onnxDir) a.onnxDir = path.join(a.modelsDir, 'onnx');
  return a;
}

const args = parseArgs(process.argv);
const ort = require(args.ort);
const MODELS = ['llama', 'qwen2', 'qwen3', 'mistral'];
const FILES = [['model.onnx', 'float32'], ['model_fp16.onnx', 'float16'],
  ['decoder_model_merged.onnx', 'float32'], ['decoder_model_merged_fp16.onnx', 'float16']];
const FOLDERS = ['optimum', 'optimum-merged', 'optimum-nocache'];
const MARGIN = 1e-2;

function readSafetensors(file) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = {};
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    if (info.dtype !== 'F32') throw new Error(`${file}: ${name} is ${info.dtype}, expected F32`);
    const [s, e] = info.data_offsets;
    const bytes = buf.subarray(8 + n + s, 8 + n + e);
    const data = new Float32Array(bytes.length / 4);
    for (let i = 0; i < data.length; i++) data[i] = bytes.readFloatLE(4 * i);
    out[name] = { shape: info.shape, data };
  }
  return out;
}

function argmax(a, off, n) {
  let best = 0;
  for (let i = 1; i < n; i++) if (a[off + i] > a[off + best]) best = i;
  return best;
}

function top2Margin(a, off, n) {
  let m1 = -Infinity, m2 = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = a[off + i];
    if (v > m1) { m2 = m1; m1 = v; } else if (v > m2) m2 = v;
  }
  return m1 - m2;
}

// rows: array of Float32Array(vocab); want: golden Float32Array [24*vocab]
function compareRows(rows, want, vocab) {
  let num = 0, den = 0, maxAbs = 0, bad = 0, checked = 0, nan = false;
  rows.forEach((r, i) => {
    for (let j = 0; j < vocab; j++) {
      const w = want[i * vocab + j], d = r[j] - w;
      if (!Number.isFinite(r[j])) nan = true;
      num += d * d; den += w * w; maxAbs = Math.max(maxAbs, Math.abs(d));
    }
    if (top2Margin(want, i * vocab, vocab) > MARGIN) {
      checked++;
      if (argmax(r, 0, vocab) !== argmax(want, i * vocab, vocab)) bad++;
    }
  });
  return { rel: nan ? NaN : Math.sqrt(num / den), maxAbs, bad, checked };
}

function relL2(a, b) {
  let num = 0, den = 0;
  for (let i = 0; i < a.length; i++) { const d = a[i] - b[i]; num += d * d; den += b[i] * b[i]; }
  return Math.sqrt(num / den);
}

class Runner {
  constructor(session, cfg) {
    this.s = session;
    this.layers = cfg.num_hidden_layers;
    this.kv = cfg.num_key_value_heads;
    this.hd = cfg.head_dim || cfg.hidden_size / cfg.num_attention_heads;
    this.vocab = cfg.vocab_size;
    this.hasPast = session.inputNames.includes('past_key_values.0.key');
    this.merged = session.inputNames.includes('use_cache_branch');
  }
  emptyPast(batch) {
    const past = [];
    for (let i = 0; i < this.layers; i++) {
      past.push({
        key: new ort.Tensor('float32', new Float32Array(0), [batch, this.kv, 0, this.hd]),
        value: new ort.Tensor('float32', new Float32Array(0), [batch, this.kv, 0, this.hd]),
      });
    }
    return past;
  }
  // ids, mask, pos: arrays of rows (batch); returns {logits: [batch][seq] Float32Array(vocab), past}
  async run(ids, mask, pos, past) {
    if (!this.hasPast) return this.runWhole(ids, mask, pos, past);
    const B = ids.length, S = ids[0].length, T = mask[0].length;
    const i64 = (rows, n) => new ort.Tensor('int64', BigInt64Array.from(rows.flat().map(BigInt)), [B, n]);
    const feeds = { input_ids: i64(ids, S), attention_mask: i64(mask, T), position_ids: i64(pos, S) };
    if (this.merged) feeds.use_cache_branch = new ort.Tensor('bool', Uint8Array.from([past ? 1 : 0]), [1]);
    past = past || this.emptyPast(B);
    for (let i = 0; i < this.layers; i++) {
      feeds[`past_key_values.${i}.key`] = past[i].key;
      feeds[`past_key_values.${i}.value`] = past[i].value;
    }
    const out = await this.s.run(feeds);
    const lg = out.logits;
    if (lg.dims.join() !== [B, S, this.vocab].join()) throw new Error(`logits dims ${lg.dims}`);
    const logits = [];
    for (let b = 0; b < B; b++) {
      const rows = [];
      for (let t = 0; t < S; t++) rows.push(lg.data.slice((b * S + t) * this.vocab, (b * S + t + 1) * this.vocab));
      logits.push(rows);
    }
    const present = [];
    for (let i = 0; i < this.layers; i++) {
      const k = out[`present.${i}.key`], v = out[`present.${i}.value`];
      if (k.dims.join() !== [B, this.kv, T, this.hd].join()) throw new Error(`present.${i}.key dims ${k.dims}`);
      present.push({ key: k, value: v });
    }
    return { logits, past: present };
  }
  // A graph without a cache: the "past" is the ids and positions so far, run again whole.
  async runWhole(ids, mask, pos, past) {
    const B = ids.length, S = ids[0].length, T = mask[0].length;
    const allIds = past ? ids.map((r, b) => [...past.ids[b], ...r]) : ids;
    const allPos = past ? pos.map((r, b) => [...past.pos[b], ...r]) : pos;
    const i64 = (rows, n) => new ort.Tensor('int64', BigInt64Array.from(rows.flat().map(BigInt)), [B, n]);
    const out = await this.s.run({ input_ids: i64(allIds, T), attention_mask: i64(mask, T),
      position_ids: i64(allPos, T) });
    const lg = out.logits;
    if (lg.dims.join() !== [B, T, this.vocab].join()) throw new Error(`logits dims ${lg.dims}`);
    const logits = [];
    for (let b = 0; b < B; b++) {
      const rows = [];
      for (let t = T - S; t < T; t++) rows.push(lg.data.slice((b * T + t) * this.vocab, (b * T + t + 1) * this.vocab));
      logits.push(rows);
    }
    return { logits, past: { ids: allIds, pos: allPos } };
  }
}

const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);
const ones = (n) => new Array(n).fill(1);

async function checkModel(m, file, dtype) {
  const dir = path.join(args.modelsDir, m);
  const golden = JSON.parse(fs.readFileSync(path.join(dir, 'golden.json'), 'utf8'));
  const want = readSafetensors(path.join(dir, 'golden_logits.safetensors')).logits;
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const session = await ort.InferenceSession.create(file, {
    executionProviders: ['cpu'], graphOptimizationLevel: args.opt, logSeverityLevel: 3,
  });
  const r = new Runner(session, cfg);
  const V = r.vocab;
  const ids = golden.input_ids, N = ids.length;
  const tol = dtype === 'float16' ? 1e-2 : 1e-4;
  const res = { model: m, file: path.relative(args.onnxDir, file), dtype, tol, fails: [] };

  // full
  const full = await r.run([ids], [ones(N)], [range(0, N)]);
  res.full = compareRows(full.logits[0], want.data, V);

  // cached: 16 then 8 single steps
  const P = 16;
  let step = await r.run([ids.slice(0, P)], [ones(P)], [range(0, P)]);
  const rows = step.logits[0].slice();
  for (let t = P; t < N; t++) {
    step = await r.run([[ids[t]]], [ones(t + 1)], [[t]], step.past);
    rows.push(step.logits[0][0]);
  }
  res.cached = compareRows(rows, want.data, V);

  // greedy 32 with the cache
  const G = golden.greedy_ids.length;
  step = await r.run([ids], [ones(N)], [range(0, N)]);
  const got = [];
  let next = argmax(step.logits[0][N - 1], 0, V);
  for (let k = 0; k < G; k++) {
    got.push(next);
    if (k + 1 === G) break;
    const t = N + k;
    step = await r.run([[next]], [ones(t + 1)], [[t]], step.past);
    next = argmax(step.logits[0][0], 0, V);
  }
  const mis = got.findIndex((x, k) => x !== golden.greedy_ids[k]);
  res.greedy = { match: mis < 0 ? G : mis, total: G, firstMismatch: mis };
  if (mis >= 0) {
    // how close the call was: this graph's logit gap between its pick and the golden's pick
    step = await r.run([ids], [ones(N)], [range(0, N)]);
    let row = step.logits[0][N - 1];
    for (let k = 0; k < mis; k++) {
      step = await r.run([[got[k]]], [ones(N + k + 1)], [[N + k]], step.past);
      row = step.logits[0][0];
    }
    res.greedy.gap = row[got[mis]] - row[golden.greedy_ids[mis]];
  }

  // pad: batch 2, row 1 left-padded
  const L = 16, pad = N - L;
  const other = golden.greedy_ids.slice(0, L);      // 16 valid ids, different from input_ids
  const padId = 0;
  const maskB = [...new Array(pad).fill(0), ...ones(L)];
  const posB = maskB.map((x, i) => (x ? i - pad : 1));
  const batch = await r.run([ids, [...new Array(pad).fill(padId), ...other]], [ones(N), maskB], [range(0, N), posB]);
  const alone = await r.run([other], [ones(L)], [range(0, L)]);
  const bRows = batch.logits[1].slice(pad), aRows = alone.logits[0];
  const flat = (rs) => Float32Array.from(rs.flatMap((x) => Array.from(x)));
  res.pad = { rel: relL2(flat(bRows), flat(aRows)), row0: compareRows(batch.logits[0], want.data, V).rel };
  // one decode step for both rows through the cache
  const nextA = argmax(batch.logits[0][N - 1], 0, V), nextB = argmax(batch.logits[1][N - 1], 0, V);
  const stepB = await r.run([[nextA], [nextB]], [ones(N + 1), [...maskB, 1]], [[N], [L]], batch.past);
  const aloneStep = await r.run([[nextB]], [ones(L + 1)], [[L]], alone.past);
  res.pad.step = relL2(stepB.logits[1][0], aloneStep.logits[0][0]);
  // control: the same padded row with the pads unmasked must give different logits
  const ctl = await r.run([[...new Array(pad).fill(padId), ...other]], [ones(N)], [posB]);
  res.pad.control = relL2(flat(ctl.logits[0].slice(pad)), flat(aRows));

  const finite = (x) => Number.isFinite(x);
  if (!(res.full.rel <= tol)) res.fails.push(`full rel ${res.full.rel}`);
  if (res.full.bad) res.fails.push(`full argmax wrong on ${res.full.bad}/${res.full.checked} rows`);
  if (!(res.cached.rel <= tol)) res.fails.push(`cached rel ${res.cached.rel}`);
  if (res.cached.bad) res.fails.push(`cached argmax wrong on ${res.cached.bad}/${res.cached.checked} rows`);
  if (dtype === 'float32' && mis >= 0) res.fails.push(`greedy mismatch at ${mis}`);
  if (!(res.pad.rel <= tol) || !(res.pad.step <= tol)) res.fails.push(`pad rel ${res.pad.rel} step ${res.pad.step}`);
  if (!(res.pad.row0 <= tol)) res.fails.push(`pad row0 rel ${res.pad.row0}`);
  if (!finite(res.pad.control) || res.pad.control < Math.max(10 * tol, 0.05)) res.fails.push(`pad control rel ${res.pad.control}`);
  return res;
}

const e = (x) => (Number.isFinite(x) ? x.toExponential(2) : String(x));

function table(results) {
  const out = [];
  out.push('| model | file | tol | full rel L2 | full argmax | cached rel L2 | cached argmax | greedy 32 | pad rel L2 (prefill / step) | pad control | result |');
  out.push('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const g = r.greedy.firstMismatch < 0 ? `${r.greedy.total}/${r.greedy.total}`
      : `first mismatch at ${r.greedy.firstMismatch} (logit gap ${e(r.greedy.gap)})`;
    out.push(`| ${r.model} | ${r.file} | ${e(r.tol)} | ${e(r.full.rel)} | ${r.full.checked - r.full.bad}/${r.full.checked} | ` +
      `${e(r.cached.rel)} | ${r.cached.checked - r.cached.bad}/${r.cached.checked} | ${g} | ` +
      `${e(r.pad.rel)} / ${e(r.pad.step)} | ${e(r.pad.control)} | ${r.fails.length ? 'FAIL: ' + r.fails.join('; ') : 'ok'} |`);
  }
  return out.join('\n');
}

async function main() {
  const results = [];
  for (const folder of FOLDERS) {
    for (const m of MODELS) {
      for (const [f, dtype] of FILES) {
        const file = path.join(args.onnxDir, folder, m, f);
        if (!fs.existsSync(file)) continue;
        results.push(await checkModel(m, file, dtype));
      }
    }
  }
  if (!results.length) { console.error(`no graphs under ${args.onnxDir}/optimum*`); process.exit(2); }
  const t = table(results);
  const header = `onnxruntime-node ${ort.env.versions.node}, CPU, graphOptimizationLevel ${args.opt}`;
  console.log(header + '\n\n' + t);
  console.log('\nargmax columns: rows whose golden top-2 margin exceeds 1e-2 with the same argmax / such rows. ' +
    'pad: row 1 of a batch of 2 (left-padded by 8) vs the same 16 ids alone; control: pads not masked.');
  if (args.updateReadme) {
    const readme = path.join(args.onnxDir, 'README.md');
    const begin = '<!-- validation:begin (written by scripts/check-onnx-test-models.js --update-readme) -->';
    const end = '<!-- validation:end -->';
    const text = fs.readFileSync(readme, 'utf8');
    const i = text.indexOf(begin), j = text.indexOf(end);
    if (i < 0 || j < 0) throw new Error(`${readme} has no validation markers`);
    const block = `${begin}\n${header}:\n\n${t}\n\n` +
      'full: 24 ids in one pass; cached: 16 ids then 8 single-token steps through present/past; argmax: rows with ' +
      'golden top-2 margin > 1e-2 whose argmax matches; greedy: 32 ids after the 24 with the cache vs ' +
      '`greedy_ids`; pad: batch of 2 with row 1 left-padded by 8 masked tokens, its logits vs the same 16 ids ' +
      'alone (prefill, then one cached decode step); control: the same row with the pads unmasked (must differ). ' +
      'A float16 greedy mismatch is reported, not failed; the logit gap is how far apart this graph puts its pick ' +
      'and the golden pick at that step (golden.json min_top2_margin_greedy says how close the float32 calls are: ' +
      'qwen2 1.7e-4).\n' + end;
    fs.writeFileSync(readme, text.slice(0, i) + block + text.slice(j + end.length));
    console.log(`updated ${readme}`);
  }
  process.exit(results.some((r) => r.fails.length) ? 1 : 0);
}

main().catch((err) => { console.error(err); process.exit(1); });
