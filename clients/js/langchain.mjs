// @langchain/openai: new ChatOpenAI(...).bindTools(tools), .stream(messages) and the chunks
// added with concat(), as LangChain.js's streaming guide shows; then tool_calls and
// invalid_tool_calls of the sum.
import { concat } from "@langchain/core/utils/stream";
import { ChatOpenAI } from "@langchain/openai";
import { serve } from "./driver.mjs";

async function run(job, signal) {
  const req = job.request;
  const llm = new ChatOpenAI({ model: job.model, apiKey: "unused", maxRetries: 0,
                               configuration: { baseURL: job.base_url },
                               ...(req.max_tokens ? { maxTokens: req.max_tokens } : {}) });
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
