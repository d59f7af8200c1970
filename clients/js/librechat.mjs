// LibreChat's streamed tool-call index repair in front of LangChain.js's chunk merge (a seed
// of this suite: a LibreChat pull request), written here from that description. The chat
// completions stream is rewritten before LangChain sees it: a call start is a delta with an
// id or a function name; repair switches on once indices prove unreliable (a start with no
// index, or a start on an index already opened); then each start gets the next index, a
// fragment with a known id goes to that call and any other fragment to the call in
// progress. Fragments with no index are anchored to the call in progress even before. State
// is kept per choice. Then ChatOpenAI.stream and concat, as the LangChain row.
import { concat } from "@langchain/core/utils/stream";
import { ChatOpenAI, ChatOpenAICompletions } from "@langchain/openai";
import { serve } from "./driver.mjs";

function reindex(state, tc) {
  const id = tc.id || undefined;
  const providerIndex = typeof tc.index === "number" ? tc.index : undefined;
  const isStart = Boolean(id) || Boolean(tc.function?.name);
  if (isStart && (providerIndex === undefined || providerIndex < state.next)) state.active = true;
  if (!state.active) {
    if (providerIndex !== undefined) {
      state.next = Math.max(state.next, providerIndex + 1);
      state.current = providerIndex;
    } else {
      tc.index = state.current ?? 0;
    }
    return;
  }
  let assigned;
  if (id !== undefined && state.byId.has(id)) assigned = state.byId.get(id);
  else if (isStart) assigned = state.next++;
  else assigned = state.current ?? 0;
  if (id !== undefined) state.byId.set(id, assigned);
  state.current = assigned;
  tc.index = assigned;
}

async function* repaired(stream) {
  const states = new Map();
  for await (const chunk of stream) {
    for (const choice of chunk.choices ?? []) {
      const calls = choice.delta?.tool_calls;
      if (!calls?.length) continue;
      if (!states.has(choice.index)) states.set(choice.index, { next: 0, active: false, byId: new Map() });
      for (const tc of calls) reindex(states.get(choice.index), tc);
    }
    yield chunk;
  }
}

class RepairedCompletions extends ChatOpenAICompletions {
  async completionWithRetry(request, options) {
    const result = await super.completionWithRetry(request, options);
    return request.stream ? repaired(result) : result;
  }
}

async function run(job, signal) {
  const req = job.request;
  const fields = { model: job.model, apiKey: "unused", maxRetries: 0,
                   configuration: { baseURL: job.base_url },
                   ...(req.max_tokens ? { maxTokens: req.max_tokens } : {}) };
  const llm = new ChatOpenAI({ ...fields, completions: new RepairedCompletions(fields) });
  const options = {};
  if (req.tool_choice !== undefined) options.tool_choice = req.tool_choice;
  if (req.parallel_tool_calls !== undefined) options.parallel_tool_calls = req.parallel_tool_calls;
  const bound = llm.bindTools(req.tools, options);
  let gathered;
  for await (const chunk of await bound.stream(req.messages, { signal })) {
    gathered = gathered === undefined ? chunk : concat(gathered, chunk);
  }
  if (!gathered) return [];
  const calls = (gathered.tool_calls ?? []).map((tc) => ({ id: tc.id, name: tc.name, arguments: tc.args }));
  for (const tc of gathered.invalid_tool_calls ?? []) {
    calls.push({ id: tc.id, name: tc.name, arguments: tc.args,
                 invalid: tc.error || "in invalid_tool_calls" });
  }
  return calls;
}

serve("@langchain/openai", run);
