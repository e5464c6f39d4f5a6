// The official `openai` Node SDK and `@langchain/openai` against a running
// `solrun --serve` (started with --api-key by test/server/sdk_test.py, which
// passes SOL_BASE_URL, SOL_MODEL and SOL_API_KEY). Exits non-zero on the
// first failed check.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { ChatOpenAI, OpenAI as LangChainOpenAI } from '@langchain/openai';

const baseURL = process.env.SOL_BASE_URL;
const model = process.env.SOL_MODEL;
const apiKey = process.env.SOL_API_KEY;
assert.ok(baseURL && model && apiKey, 'SOL_BASE_URL, SOL_MODEL and SOL_API_KEY must be set');

const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const messages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Hi' },
];
const greedy = { temperature: 0, max_tokens: 6 };
const tests = [];
const test = (name, fn) => tests.push([name, fn]);

test('models.list', async () => {
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [model]);
});

test('completions', async () => {
  const c = await client.completions.create({ model, prompt: 'Hello world', ...greedy });
  assert.equal(c.object, 'text_completion');
  assert.equal(c.choices.length, 1);
  assert.equal(typeof c.choices[0].text, 'string');
  assert.equal(c.choices[0].finish_reason, 'length');
  assert.deepEqual(c.usage, { prompt_tokens: 2, completion_tokens: 6, total_tokens: 8 });
});

test('completions stream', async () => {
  const whole = await client.completions.create({ model, prompt: 'Hello world', ...greedy });
  const stream = await client.completions.create({
    model, prompt: 'Hello world', ...greedy, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) text += c.text;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, whole.choices[0].text);
  assert.deepEqual(usage, whole.usage);
});

test('chat', async () => {
  const c = await client.chat.completions.create({ model, messages, ...greedy, n: 2 });
  assert.equal(c.object, 'chat.completion');
  assert.deepEqual(c.choices.map((x) => x.index), [0, 1]);
  assert.equal(c.choices[0].message.role, 'assistant');
  assert.equal(typeof c.choices[0].message.content, 'string');
  // Greedy: both choices say the same.
  assert.equal(c.choices[0].message.content, c.choices[1].message.content);
  assert.equal(c.usage.completion_tokens, 12);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + 12);
});

test('chat stream with usage', async () => {
  const whole = await client.chat.completions.create({ model, messages, ...greedy });
  const stream = await client.chat.completions.create({
    model, messages, ...greedy, stream: true, stream_options: { include_usage: true },
  });
  let content = '';
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      content += c.delta.content ?? '';
      finish = c.finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(content, whole.choices[0].message.content);
  assert.equal(finish, 'length');
  assert.deepEqual(usage, whole.usage);
  // The SDK's stream helper assembles the same message.
  const runner = client.chat.completions.stream({ model, messages, ...greedy });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, whole.choices[0].message.content);
});

test('chat logprobs', async () => {
  const c = await client.chat.completions.create({
    model, messages, ...greedy, logprobs: true, top_logprobs: 2,
  });
  const content = c.choices[0].logprobs.content;
  assert.equal(content.length, 6);
  for (const t of content) {
    assert.equal(typeof t.token, 'string');
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 2);
  }
});

test('errors are the SDK error classes', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages, max_tokens: 1 }),
    (e) => {
      assert.ok(e instanceof OpenAI.NotFoundError, `${e.constructor.name}: ${e.message}`);
      assert.equal(e.status, 404);
      assert.equal(e.code, 'model_not_found');
      assert.match(e.message, new RegExp(`'${model}'`));
      return true;
    });
  await assert.rejects(
    client.completions.create({ model, prompt: 'x', max_tokens: 100000 }),
    (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${e.constructor.name}: ${e.message}`);
      assert.match(e.message, /maximum context length/);
      return true;
    });
  await assert.rejects(
    client.completions.create({ model, prompt: 'x', temperature: 'hot' }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  const wrongKey = new OpenAI({ baseURL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(wrongKey.models.list(),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});

test('langchain ChatOpenAI', async () => {
  const llm = new ChatOpenAI({
    model, apiKey, temperature: 0, maxTokens: 6, maxRetries: 0,
    configuration: { baseURL },
  });
  const whole = await client.chat.completions.create({ model, messages, ...greedy });
  const reply = await llm.invoke([['system', 'Be brief.'], ['human', 'Hi']]);
  assert.equal(reply.content, whole.choices[0].message.content);
  assert.equal(reply.usage_metadata.input_tokens, whole.usage.prompt_tokens);
  assert.equal(reply.usage_metadata.output_tokens, 6);
  let streamed = '';
  for await (const chunk of await llm.stream([['system', 'Be brief.'], ['human', 'Hi']]))
    streamed += chunk.content;
  assert.equal(streamed, whole.choices[0].message.content);
  const bad = new ChatOpenAI({
    model: 'no-such-model', apiKey, maxRetries: 0, configuration: { baseURL },
  });
  await assert.rejects(bad.invoke('Hi'), (e) => e.status === 404 || /404/.test(e.message));
});

test('langchain OpenAI (completions)', async () => {
  const llm = new LangChainOpenAI({
    model, apiKey, temperature: 0, maxTokens: 6, maxRetries: 0,
    configuration: { baseURL },
  });
  const whole = await client.completions.create({ model, prompt: 'Hello world', ...greedy });
  assert.equal(await llm.invoke('Hello world'), whole.choices[0].text);
});

let failed = 0;
for (const [name, fn] of tests) {
  try {
    await fn();
    console.log(`PASS ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
  }
}
if (failed) {
  console.log(`${failed} of ${tests.length} SDK checks failed`);
  process.exit(1);
}
console.log(`all ${tests.length} SDK checks passed`);
