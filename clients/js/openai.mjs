// openai (npm): client.chat.completions.stream(...) and finalChatCompletion(), the SDK's own
// accumulation (as its README's streaming helpers show).
import OpenAI from "openai";
import { serve } from "./driver.mjs";

const pick = (req, ...keys) => Object.fromEntries(keys.filter((k) => k in req).map((k) => [k, req[k]]));

async function run(job, signal) {
  const client = new OpenAI({ baseURL: job.base_url, apiKey: "unused", maxRetries: 0 });
  const req = job.request;
  const stream = client.chat.completions.stream(
    { model: job.model, messages: req.messages, tools: req.tools,
      ...pick(req, "tool_choice", "parallel_tool_calls", "max_tokens") },
    { signal },
  );
  const completion = await stream.finalChatCompletion();
  const message = completion.choices[0]?.message ?? {};
  return (message.tool_calls ?? []).map((tc) => ({ id: tc.id, name: tc.function?.name,
                                                  arguments: tc.function?.arguments }));
}

serve("openai", run);
