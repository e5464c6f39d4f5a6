#!/usr/bin/env node
// Writes onnxruntime's goldens beside an ONNX decoder graph: golden.json and
// golden_logits.safetensors in the format of test/models/<model>/ (what
// test/e2e/check-goldens.py reads), for graphs whose values differ from their
// checkpoint's (quantized ones: MatMulNBits, QDQ).
//
// A dev tool (CI has no Node onnxruntime): it needs onnxruntime-node, found
// through --ort, $ORT_NODE, or /tmp/ortnode/node_modules/onnxruntime-node
// (npm install --ignore-scripts onnxruntime-node).
//
//   node scripts/make-onnx-ort-goldens.js --graph test/models/onnx/genai/int4/llama \
//       --inputs test/models/llama/golden.json
//
// --graph is a folder holding model.onnx or a graph file; the goldens go
// beside it. The cache's sizes come from genai_config.json, else config.json.
//
// The input ids and the greedy length are the checkpoint's (--inputs). The
// graph runs on the CPU with graph optimizations off: the ids in one pass
// with an empty cache (teacher-forced logits of every position), then the
// greedy continuation one token at a time, present -> past (a buffer of the
// whole length when GroupQueryAttention keeps a sliding-window cache, as
// onnxruntime-genai runs it). MatMulNBits nodes run at accuracy_level 1
// (float32 arithmetic on the dequantized weights) instead of the CPU default
// 4 (int8 activations): the graph is copied with that attribute rewritten in
// place. Each greedy step's top-2 margin is recorded (greedy_top2_margins),
// so that a comparison can stop at a tie.
'use strict';

const fs = require('fs');
const path = require('path');

function parseArgs(argv) {
  const a = {
    graph: null,
    inputs: null,
    ort: process.env.ORT_NODE || '/tmp/ortnode/node_modules/onnxruntime-node',
  };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--graph') a.graph = argv[++i];
    else if (k === '--inputs') a.inputs = argv[++i];
    else if (k === '--ort') a.ort = argv[++i];
    else { console.error(`unknown argument ${k}`); process.exit(2); }
  }
  if (!a.graph || !a.inputs) {
    console.error('usage: make-onnx-ort-goldens.js --graph DIR --inputs golden.json [--ort PATH]');
    process.exit(2);
  }
  return a;
}

// AttributeProto {name: "accuracy_level", i: 4} as serialized: field 1
// (length-delimited, 14 bytes) then field 3 (varint 4). Rewriting the
// varint keeps every length intact.
function withAccuracyLevel1(bytes) {
  const pattern = Buffer.concat([Buffer.from([0x0a, 0x0e]), Buffer.from('accuracy_level'), Buffer.from([0x18])]);
  const out = Buffer.from(bytes);
  let count = 0;
  for (let at = out.indexOf(pattern); at >= 0; at = out.indexOf(pattern, at + 1)) {
    const value = at + pattern.length;
    if (out[value] > 0x7f) throw new Error('accuracy_level is not a one-byte varint');
    out[value] = 1;
    count++;
  }
  return { bytes: out, count };
}

function countOf(bytes, text) {
  let n = 0;
  for (let at = bytes.indexOf(text); at >= 0; at = bytes.indexOf(text, at + 1)) n++;
  return n;
}

function writeSafetensorsF32(file, name, shape, data) {
  const header = Buffer.from(JSON.stringify({ [name]: { dtype: 'F32', shape, data_offsets: [0, data.length * 4] } }));
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(header.length));
  const body = Buffer.alloc(data.length * 4);
  for (let i = 0; i < data.length; i++) body.writeFloatLE(data[i], 4 * i);
  fs.writeFileSync(file, Buffer.concat([size, header, body]));
}

function top2Margin(a, off, n) {
  let m1 = -Infinity, m2 = -Infinity, best = 0;
  for (let i = 0; i < n; i++) {
    const v = a[off + i];
    if (v > m1) { m2 = m1; m1 = v; best = i; } else if (v > m2) m2 = v;
  }
  return { best, margin: m1 - m2 };
}

async function main() {
  const args = parseArgs(process.argv);
  const ort = require(args.ort);
  // A graph file, or a folder holding model.onnx.
  const graphFile = fs.statSync(args.graph).isDirectory() ? path.join(args.graph, 'model.onnx') : args.graph;
  const dir = path.dirname(graphFile);
  // The cache's sizes: genai_config.json's, else config.json's.
  let kv, hd;
  if (fs.existsSync(path.join(dir, 'genai_config.json'))) {
    const decoder = JSON.parse(fs.readFileSync(path.join(dir, 'genai_config.json'), 'utf8')).model.decoder;
    kv = decoder.num_key_value_heads;
    hd = decoder.head_size;
  } else {
    const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    kv = cfg.num_key_value_heads;
    hd = cfg.head_dim || cfg.hidden_size / cfg.num_attention_heads;
  }
  const inputs = JSON.parse(fs.readFileSync(args.inputs, 'utf8'));

  const original = fs.readFileSync(graphFile);
  const patched = withAccuracyLevel1(original);
  const nodes = countOf(original, Buffer.from('MatMulNBits'));
  if (patched.count > nodes)
    throw new Error(`found ${patched.count} accuracy_level attributes for ${nodes} MatMulNBits mentions`);
  // Beside the original, so that its external data resolves.
  const exact = path.join(dir, 'model_accuracy1.onnx');
  fs.writeFileSync(exact, patched.bytes);
  let session;
  try {
    session = await ort.InferenceSession.create(exact, { graphOptimizationLevel: 'disabled' });
  } finally {
    fs.unlinkSync(exact);
  }

  const names = session.inputNames;
  const pastNames = names.filter((n) => n.startsWith('past_key_values.'));
  const float16 = (session.inputMetadata || []).some((m) => m.name === pastNames[0] && m.type === 'float16');
  const slidingCache = countOf(original, Buffer.from('sliding_window_cache')) > 0;
  const ids = inputs.input_ids;
  const steps = inputs.greedy_ids.length;
  const capacity = slidingCache ? ids.length + steps : 0;
  let past = {};
  for (const n of pastNames) {
    const count = kv * capacity * hd;
    past[n] = float16
      ? new ort.Tensor('float16', new Uint16Array(count), [1, kv, capacity, hd])
      : new ort.Tensor('float32', new Float32Array(count), [1, kv, capacity, hd]);
  }
  async function step(tokens, start) {
    const total = start + tokens.length;
    const feeds = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(tokens.map(BigInt)), [1, tokens.length]),
    };
    if (names.includes('attention_mask'))
      feeds.attention_mask = new ort.Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]);
    if (names.includes('position_ids'))
      feeds.position_ids = new ort.Tensor('int64',
        BigInt64Array.from(tokens.map((_, i) => BigInt(start + i))), [1, tokens.length]);
    Object.assign(feeds, past);
    const out = await session.run(feeds);
    const next = {};
    for (const n of pastNames) next[n] = out[n.replace('past_key_values.', 'present.')];
    past = next;
    const logits = out.logits;
    return { data: Float32Array.from(logits.data, Number), vocab: logits.dims[2] };
  }

  const first = await step(ids, 0);
  const vocab = first.vocab;
  const greedy = [], margins = [];
  let pick = top2Margin(first.data, (ids.length - 1) * vocab, vocab);
  greedy.push(pick.best);
  margins.push(pick.margin);
  for (let t = 1; t < steps; t++) {
    const o = await step([greedy[greedy.length - 1]], ids.length + t - 1);
    pick = top2Margin(o.data, 0, vocab);
    greedy.push(pick.best);
    margins.push(pick.margin);
  }
  let minRowMargin = Infinity;
  for (let r = 0; r < ids.length; r++) minRowMargin = Math.min(minRowMargin, top2Margin(first.data, r * vocab, vocab).margin);

  writeSafetensorsF32(path.join(dir, 'golden_logits.safetensors'), 'logits', [ids.length, vocab], first.data);
  const golden = {
    input_ids: ids,
    greedy_ids: greedy,
    greedy_top2_margins: margins.map((m) => Number(m.toPrecision(6))),
    logits_file: 'golden_logits.safetensors',
    logits_shape: [ids.length, vocab],
    min_top2_margin_logits: Number(minRowMargin.toPrecision(6)),
    compute: `onnxruntime-node ${require(path.join(args.ort, 'package.json')).version} (CPU, graph optimizations off) ` +
      `on ${path.basename(graphFile)}` +
      (patched.count ? ', MatMulNBits at accuracy_level 1 (float32 arithmetic on the dequantized weights)' : ''),
    source: 'scripts/make-onnx-ort-goldens.js',
  };
  // One key per line, arrays inline.
  const text = Object.entries(golden).map(([k, v]) => ` ${JSON.stringify(k)}: ${JSON.stringify(v)}`).join(',\n');
  fs.writeFileSync(path.join(dir, 'golden.json'), `{\n${text}\n}\n`);
  const tie = margins.findIndex((m) => m < 1e-3);
  console.log(`${graphFile}: ${patched.count} MatMulNBits at accuracy_level 1, greedy ${greedy.slice(0, 8).join(',')}...` +
    (tie >= 0 ? ` (tie at step ${tie + 1})` : ''));
}

main().catch((e) => { console.error(e); process.exit(1); });
