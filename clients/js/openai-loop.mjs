// openai (npm), the raw loop of OpenAI's function-calling guide: create({stream: true}) and,
// per delta.tool_calls entry, the first delta of an index kept as the call and the later
// deltas' function.arguments added to it (beside the SDK's stream helper).
import OpenAI from "openai";
import { serve } from "./driver.mjs";

const pick = (req, ...keys) => Object.fromEntries(keys.filter((k) => k in req).map((k) => [k, req[k]]));

async function run(job, signal) {
  const client = new OpenAI({ baseURL: job.base_url, apiKey: "unused", maxRetries: 0 });
  const req = job.request;
  const stream = await client.chat.completions.create(
    { model: job.model, messages: req.messages, tools: req.tools, stream: true,
      ...pick(req, "tool_choice", "parallel_tool_calls", "max_tokens") },
    { signal },
  );
  const finalToolCalls = {};
  for await (const chunk of stream) {
    const toolCalls = chunk.choices[0].delta.tool_calls || [];
    for (const toolCall of toolCalls) {
      const { index } = toolCall;
      if (!finalToolCalls[index]) {
        finalToolCalls[index] = toolCall;
      } else {
        finalToolCalls[index].function.arguments += toolCall.function.arguments;
      }
    }
  }
  return Object.values(finalToolCalls).map((tc) => ({ id: tc.id, name: tc.function?.name,
                                                     arguments: tc.function?.arguments }));
}

serve("openai", run);
